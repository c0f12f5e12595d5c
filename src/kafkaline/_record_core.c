/*
 * kafkaline._record_core: the compiled record core.
 *
 * A RecordBatchBuilder with the interface of kafkaline.record.builder.RecordBatchBuilder (the
 * pure-Python reference, which must give the same bytes): each record is encoded into the
 * batch's buffer when it is appended, so the batch's size is always exact; sealing compresses
 * (in Python, through kafkaline.record.compression) and writes the 61-byte header and the
 * CRC-32C. Also murmur2 (Kafka's key hash) and crc32c.
 *
 * Record layout (v2), every integer a zigzag varint:
 *     length, attributes (int8 0), timestamp_delta (varlong), offset_delta, key_length (-1 for
 *     null), key, value_length (-1 for null), value, header_count, headers (key_length, key
 *     UTF-8, value_length or -1, value).
 * Batch header (61 bytes, big-endian): base_offset int64, batch_length int32,
 *     partition_leader_epoch int32, magic int8 (2), crc uint32 (CRC-32C of [21, end)),
 *     attributes int16, last_offset_delta int32, base_timestamp int64, max_timestamp int64,
 *     producer_id int64, producer_epoch int16, base_sequence int32, record_count int32.
 *
 * The buffer is a bytes object grown while nobody else holds it; build_buffer() fills in its
 * header and hands it out without a copy (a later rebuild writes into a copy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define KL_HW_CRC 1
#include <nmmintrin.h>
#endif

#define HEADER_SIZE 61
#define CRC_OFFSET 17
#define CRC_SPAN_START 21
#define LOG_OVERHEAD 12
#define MAX_BATCH_SIZE ((int64_t)LOG_OVERHEAD + (int64_t)0x7FFFFFFF)
#define ATTR_TIMESTAMP_TYPE 0x08
#define ATTR_TRANSACTIONAL 0x10
#define ATTR_CONTROL 0x20
#define INITIAL_CAPACITY 512
#define GROWN_CAPACITY 4096

/* The parts, in order: one translation unit, so that what is static stays static and the
 * compiler still inlines across parts (the same code as one file). */
#include "_core_hashes.c"
#include "_core_support.c"
#include "_core_builder.c"
#include "_core_builder_append.c"
#include "_core_builder_many.c"
#include "_core_builder_seal.c"
#include "_core_queue_lock.c"
#include "_core_future.c"
#include "_core_sender.c"
#include "_core_sender_lookups.c"
#include "_core_batch_pool.c"
#include "_core_batch_step.c"
#include "_core_batch_step_run.c"
#include "_core_batch_step_type.c"
#include "_core_batch_grow.c"
#include "_core_sender_call.c"
#include "_core_lists.c"
#include "_core_produce_response.c"
#include "_core_produce_request.c"
#include "_core_result.c"

static PyMethodDef core_methods[] = {
    {"buffer_capacity", (PyCFunction)core_buffer_capacity, METH_O,
     "buffer_capacity(builder): bytes the builder's buffer has room for."},
    {"murmur2", (PyCFunction)core_murmur2, METH_O,
     "Kafka's murmur2 hash of data, a signed 32-bit int."},
    {"partition_for_key", (PyCFunction)(void (*)(void))core_partition_for_key, METH_FASTCALL,
     "The default partitioner's choice: to_positive(murmur2(key)) % partition_count."},
    {"lists_accepted", (PyCFunction)(void (*)(void))core_lists_accepted, METH_FASTCALL,
     "Whether send_batch()'s values, keys and headers are lists the core takes whole."},
    {"group_positions", (PyCFunction)(void (*)(void))core_group_positions, METH_FASTCALL,
     "Input positions per partition (given, murmur2 of the key, or None: sticky)."},
    {"crc32c", (PyCFunction)(void (*)(void))core_crc32c, METH_FASTCALL,
     "CRC-32C of data, continuing from crc."},
    {"decode_produce_response", (PyCFunction)(void (*)(void))core_decode_produce_response,
     METH_FASTCALL,
     "A v9+ ProduceResponse body in its usual shape as the given classes' objects, or None."},
    {"write_produce_request", (PyCFunction)(void (*)(void))core_write_produce_request,
     METH_FASTCALL, "Append a usual v9+ ProduceRequest body to out; False if not usual."},
    {"new_partition_data", (PyCFunction)(void (*)(void))core_new_partition_data,
     METH_FASTCALL, "An object of cls per (index, records) pair, or None if not 2-tuples."},
    {"register_future_type", (PyCFunction)core_register_future_type, METH_O,
     "Have a subclass of RecordFuture with __slots__ = () freed as RecordFuture is."},
    {"register_result_states", (PyCFunction)(void (*)(void))core_register_result_states,
     METH_FASTCALL, "The BatchState members SUCCEEDED and SPLIT, for BatchResult.complete()."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafkaline._record_core",
    .m_doc = "The compiled record core (see kafkaline.record.core).",
    .m_size = -1,
    .m_methods = core_methods,
};

/* The attribute names the core looks up, interned once. */
static const struct {
    PyObject **slot;
    const char *name;
} interned_names[] = {
    {&str_queues, "_queues"},
    {&str_lock, "lock"},
    {&str_batches, "batches"},
    {&str_builder, "builder"},
    {&str_result, "result"},
    {&str_sticky, "_sticky"},
    {&str_current, "_current"},
    {&str_partition, "partition"},
    {&str_produced_bytes, "produced_bytes"},
    {&str_sticky_batch_size, "sticky_batch_size"},
    {&str_compression, "compression"},
    {&str_compression_level, "compression_level"},
    {&str_ratio, "estimated_compression_ratio"},
    {&str_is_transactional, "is_transactional"},
    {&str_release, "release"},
    {&str_run_hook, "_run_hook"},
    {&str_add_hook, "add_hook"},
    {&str_waits_for_itself, "_waits_for_itself"},
    {&str_value, "value"},
    {&str_traceback, "__traceback__"},
    {&str_closed, "_closed"},
    {&str_try_allocate, "try_allocate"},
    {&str_deallocate, "deallocate"},
    {&str_append, "append"},
    {&str_tp, "tp"},
    {&str_pooled_bytes, "pooled_bytes"},
    {&str_is_split_batch, "is_split_batch"},
    {&str_total_memory, "total_memory"},
};

static int
intern_names(void)
{
    for (size_t i = 0; i < sizeof(interned_names) / sizeof(interned_names[0]); i++)
        if ((*interned_names[i].slot = PyUnicode_InternFromString(interned_names[i].name)) == NULL)
            return -1;
    return 0;
}

PyMODINIT_FUNC
PyInit__record_core(void)
{
    crc_init();
    if (PyType_Ready(&BuilderType) < 0 || PyType_Ready(&OpenBatchSenderType) < 0 ||
        PyType_Ready(&QueueLockType) < 0 || PyType_Ready(&RecordFutureType) < 0 ||
        PyType_Ready(&BatchResultType) < 0 ||
        PyType_Ready(&BatchStepType) < 0 || PyType_Ready(&PoolStateType) < 0)
        return NULL;
    if (intern_names() < 0 || (minus_one = PyLong_FromLong(-1)) == NULL)
        return NULL;
    static const char *const complete_arg_names[5] = {"state", "base_offset", "log_append_time",
                                                      "error", "record_errors"};
    for (int i = 0; i < 5; i++)
        if ((str_complete_args[i] = PyUnicode_InternFromString(complete_arg_names[i])) == NULL)
            return NULL;
    static const char *const send_arg_names[6] = {"topic",     "value",        "key",
                                                  "headers",   "partition",    "timestamp_ms"};
    for (int i = 0; i < 6; i++)
        if ((str_send_args[i] = PyUnicode_InternFromString(send_arg_names[i])) == NULL)
            return NULL;
    PyObject *module = PyModule_Create(&core_module);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "RecordBatchBuilder", (PyObject *)&BuilderType) < 0 ||
        PyModule_AddObjectRef(module, "OpenBatchSender", (PyObject *)&OpenBatchSenderType) < 0 ||
        PyModule_AddObjectRef(module, "QueueLock", (PyObject *)&QueueLockType) < 0 ||
        PyModule_AddObjectRef(module, "RecordFuture", (PyObject *)&RecordFutureType) < 0 ||
        PyModule_AddObjectRef(module, "BatchResult", (PyObject *)&BatchResultType) < 0 ||
        PyModule_AddObjectRef(module, "NewBatchStep", (PyObject *)&BatchStepType) < 0 ||
        PyModule_AddObjectRef(module, "PoolState", (PyObject *)&PoolStateType) < 0 ||
        PyModule_AddStringConstant(module, "BUILD", "compiled") < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
