/* kafkaline._record_core: produce request writing.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ------------------------------------------------------------------------------------------
 * Produce request writing (the I/O thread's fast path; produce._write_usual is the reference,
 * and a test requires the same bytes and the same deferred record sets from both).
 *
 * A v9+ ProduceRequest body without a transactional id:
 *   transactional_id 0x00 (null), acks int16, timeout_ms int32,
 *   topics compact count; per topic: name compact string, partitions compact count; per
 *   partition: index int32, records compact bytes (referenced through `deferred` when at least
 *   scatter_min bytes and deferred is a list), tagged fields 0x00; topic tagged fields 0x00;
 *   request tagged fields 0x00.
 * False (having written some) for any other shape or a value out of range: the caller takes
 * the bytes back and the generic encoder writes the request, naming what is wrong.
 * ------------------------------------------------------------------------------------------ */

static PyObject *pw_str_topic_data, *pw_str_transactional_id, *pw_str_acks, *pw_str_timeout_ms;
static PyObject *pw_str_partition_data, *pw_str_records;

static int
pw_init_names(void)
{
    if (pw_str_records != NULL)
        return 0;
    if ((pw_str_topic_data = PyUnicode_InternFromString("topic_data")) == NULL ||
        (pw_str_transactional_id = PyUnicode_InternFromString("transactional_id")) == NULL ||
        (pw_str_acks = PyUnicode_InternFromString("acks")) == NULL ||
        (pw_str_timeout_ms = PyUnicode_InternFromString("timeout_ms")) == NULL ||
        (pw_str_partition_data = PyUnicode_InternFromString("partition_data")) == NULL ||
        (pw_str_records = PyUnicode_InternFromString("records")) == NULL)
        return -1;
    return 0;
}

/* Append n bytes to the bytearray; -1 on error. */
static int
pw_append(PyObject *out, const void *data, Py_ssize_t n)
{
    Py_ssize_t size = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, size + n) < 0)
        return -1;
    memcpy(PyByteArray_AS_STRING(out) + size, data, (size_t)n);
    return 0;
}

static int
pw_append_uvarint(PyObject *out, uint64_t value)
{
    unsigned char buf[10];
    int n = 0;
    while (value >= 0x80) {
        buf[n++] = (unsigned char)((value & 0x7F) | 0x80);
        value >>= 7;
    }
    buf[n++] = (unsigned char)value;
    return pw_append(out, buf, n);
}

static int
pw_append_int(PyObject *out, int64_t value, int size)
{
    unsigned char buf[8];
    for (int i = size - 1; i >= 0; i--) {
        buf[i] = (unsigned char)(value & 0xFF);
        value >>= 8;
    }
    return pw_append(out, buf, size);
}

/* The int value of obj within [low, high]: 0 and *value set; 1 if not an int or out of range
 * (not the usual shape, no exception left); -1 on another error. */
static int
pw_int_in(PyObject *obj, long long low, long long high, long long *value)
{
    if (PyFloat_Check(obj))
        return 1;
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) ||
            PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            return 1;
        }
        return -1;
    }
    if (v < low || v > high)
        return 1;
    *value = v;
    return 0;
}

/* obj.name, or NULL with no exception left when the attribute is missing (not the usual
 * shape); NULL with an exception on another error. */
static PyObject *
pw_attr(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    return value;
}

/* Where a field was last read from its slot: the class and its version tag, and the slot's
 * offset (-1: none, getattr reads it). */
typedef struct {
    PyObject *type;
    unsigned int version;
    Py_ssize_t offset;
} PwSlot;

static PwSlot pw_slot_index, pw_slot_records;

/* pw_attr(), read straight from the slot when the object's class has a plain one (a
 * partition's two fields per batch: getattr's lookup cost more than writing them). */
static PyObject *
pw_slot_attr(PyObject *obj, PyObject *name, PwSlot *cache)
{
    PyObject *type = (PyObject *)Py_TYPE(obj);
    if (cache->type != type || cache->version == 0 || cache->version != pr_version(type)) {
        Py_XSETREF(cache->type, Py_NewRef(type));
        cache->offset = Py_TYPE(obj)->tp_getattro == PyObject_GenericGetAttr
                            ? pr_slot_offset(type, name)
                            : -1;
        cache->version = pr_version(type);
    }
    PyObject *value = cache->offset < 0 ? NULL : *(PyObject **)((char *)obj + cache->offset);
    if (value == NULL)
        return pw_attr(obj, name); /* no slot, or unset: getattr names what is wrong */
    return Py_NewRef(value);
}

#define PW_NOT_USUAL 1

/* A view's records (its size in bytes may not be its len()): the records field's own writer
 * after the index. Takes the reference to records. */
static int
pw_write_view_records(PyObject *out, long long index, PyObject *records,
                      PyObject *write_records)
{
    if (pw_append_int(out, index, 4) < 0) {
        Py_DECREF(records);
        return -1;
    }
    PyObject *written = PyObject_CallFunctionObjArgs(write_records, out, records, NULL);
    Py_DECREF(records);
    if (written == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyErr_Clear(); /* the generic encoder raises the named error */
        return PW_NOT_USUAL;
    }
    Py_DECREF(written);
    return pw_append(out, "", 1) < 0 ? -1 : 0;
}

/* index, then the records' compact length (uvarint of size + 1, at most five bytes), into
 * head[9]; its size. */
static inline int
pw_records_head(unsigned char *head, long long index, Py_ssize_t size)
{
    /* written out: as a loop through the head pointer it was no longer unrolled */
    head[0] = (unsigned char)(index >> 24);
    head[1] = (unsigned char)(index >> 16);
    head[2] = (unsigned char)(index >> 8);
    head[3] = (unsigned char)index;
    int head_size = 4;
    uint64_t length = (uint64_t)size + 1;
    while (length >= 0x80) {
        head[head_size++] = (unsigned char)((length & 0x7F) | 0x80);
        length >>= 7;
    }
    head[head_size++] = (unsigned char)length;
    return head_size;
}

/* The head now, and (position in out, records) in deferred: the caller sends the records
 * from their own buffer. Takes the reference to records. */
static int
pw_defer_records(PyObject *out, const unsigned char *head, int head_size, PyObject *records,
                 PyObject *deferred)
{
    if (pw_append(out, head, head_size) < 0) {
        Py_DECREF(records);
        return -1;
    }
    PyObject *entry = PyTuple_New(2);
    PyObject *position = PyLong_FromSsize_t(PyByteArray_GET_SIZE(out));
    if (entry == NULL || position == NULL) {
        Py_XDECREF(entry);
        Py_XDECREF(position);
        Py_DECREF(records);
        return -1;
    }
    PyTuple_SET_ITEM(entry, 0, position);
    PyTuple_SET_ITEM(entry, 1, records); /* takes the reference */
    int rc = PyList_Append(deferred, entry);
    Py_DECREF(entry);
    if (rc < 0)
        return -1;
    return pw_append(out, "", 1) < 0 ? -1 : 0; /* the partition's tagged fields */
}

/* Head, records and the partition's tagged fields (none) in one resize. records may be out
 * itself only in a caller's bug; its data is read after the resize (a bytearray's buffer
 * moves when it grows). Takes the reference to records. */
static inline int
pw_copy_records(PyObject *out, const unsigned char *head, int head_size, PyObject *records,
                Py_ssize_t size)
{
    if (records == out) {
        Py_DECREF(records);
        return PW_NOT_USUAL;
    }
    Py_ssize_t start = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, start + head_size + size + 1) < 0) {
        Py_DECREF(records);
        return -1;
    }
    char *at = PyByteArray_AS_STRING(out) + start;
    const char *data =
        PyBytes_Check(records) ? PyBytes_AS_STRING(records) : PyByteArray_AS_STRING(records);
    memcpy(at, head, (size_t)head_size);
    memcpy(at + head_size, data, (size_t)size);
    at[head_size + size] = 0;
    Py_DECREF(records);
    return 0;
}

static int
pw_write_partition(PyObject *out, PyObject *partition, PyObject *deferred,
                   PyObject *write_records, Py_ssize_t scatter_min)
{
    PyObject *index_obj = pw_slot_attr(partition, pr_names[PR_INDEX], &pw_slot_index);
    if (index_obj == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    long long index;
    int rc = pw_int_in(index_obj, INT32_MIN, INT32_MAX, &index);
    Py_DECREF(index_obj);
    if (rc != 0)
        return rc;
    PyObject *records = pw_slot_attr(partition, pw_str_records, &pw_slot_records);
    if (records == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    if (!PyBytes_Check(records) && !PyByteArray_Check(records)) {
        if (PyMemoryView_Check(records))
            return pw_write_view_records(out, index, records, write_records);
        Py_DECREF(records);
        return PW_NOT_USUAL; /* null records (or not bytes): the generic way */
    }
    Py_ssize_t size = PyBytes_Check(records) ? PyBytes_GET_SIZE(records)
                                             : PyByteArray_GET_SIZE(records);
    if ((uint64_t)size >= ((uint64_t)1 << 32) - 1) {
        Py_DECREF(records);
        return PW_NOT_USUAL;
    }
    unsigned char head[9];
    int head_size = pw_records_head(head, index, size);
    if (deferred != Py_None && size >= scatter_min)
        return pw_defer_records(out, head, head_size, records, deferred);
    return pw_copy_records(out, head, head_size, records, size);
}

/* The request's transactional_id (None), acks and timeout_ms. */
static int
pw_read_header(PyObject *request, long long *acks, long long *timeout)
{
    PyObject *txn = pw_attr(request, pw_str_transactional_id);
    if (txn == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    int rc = txn == Py_None ? 0 : PW_NOT_USUAL;
    Py_DECREF(txn);
    if (rc != 0)
        return rc;
    PyObject *acks_obj = pw_attr(request, pw_str_acks);
    if (acks_obj == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    rc = pw_int_in(acks_obj, INT16_MIN, INT16_MAX, acks);
    Py_DECREF(acks_obj);
    if (rc != 0)
        return rc;
    PyObject *timeout_obj = pw_attr(request, pw_str_timeout_ms);
    if (timeout_obj == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    rc = pw_int_in(timeout_obj, INT32_MIN, INT32_MAX, timeout);
    Py_DECREF(timeout_obj);
    return rc;
}

/* A topic's name (a str, as UTF-8 in *utf8) and its partitions (a list or tuple). */
static int
pw_read_topic(PyObject *topic, PyObject **name, const char **utf8, Py_ssize_t *name_size,
              PyObject **partitions)
{
    *name = pw_attr(topic, pr_names[PR_NAME]);
    *partitions = *name == NULL ? NULL : pw_attr(topic, pw_str_partition_data);
    if (*name == NULL || *partitions == NULL) {
        Py_CLEAR(*name);
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    }
    *utf8 = PyUnicode_Check(*name) ? PyUnicode_AsUTF8AndSize(*name, name_size) : NULL;
    int rc = 0;
    if (*utf8 == NULL) {
        rc = PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_UnicodeError) ? -1 : PW_NOT_USUAL;
        if (rc == PW_NOT_USUAL)
            PyErr_Clear();
    }
    else if (!PyList_Check(*partitions) && !PyTuple_Check(*partitions)) {
        rc = PW_NOT_USUAL;
    }
    if (rc != 0) {
        Py_CLEAR(*name);
        Py_CLEAR(*partitions);
    }
    return rc;
}

static int
pw_write_topic(PyObject *out, PyObject *topic, PyObject *deferred, PyObject *write_records,
               Py_ssize_t scatter_min)
{
    PyObject *name, *partitions;
    const char *utf8;
    Py_ssize_t name_size;
    int rc = pw_read_topic(topic, &name, &utf8, &name_size, &partitions);
    if (rc != 0)
        return rc;
    if (pw_append_uvarint(out, (uint64_t)name_size + 1) < 0 ||
        pw_append(out, utf8, name_size) < 0 ||
        pw_append_uvarint(out, (uint64_t)PySequence_Fast_GET_SIZE(partitions) + 1) < 0)
        rc = -1;
    Py_DECREF(name);
    for (Py_ssize_t p = 0; rc == 0 && p < PySequence_Fast_GET_SIZE(partitions); p++) {
        PyObject *partition = Py_NewRef(PySequence_Fast_GET_ITEM(partitions, p));
        rc = pw_write_partition(out, partition, deferred, write_records, scatter_min);
        Py_DECREF(partition);
    }
    Py_DECREF(partitions);
    if (rc == 0 && pw_append(out, "", 1) < 0) /* the topic's tagged fields */
        rc = -1;
    return rc;
}

static int
pw_write(PyObject *out, PyObject *request, PyObject *deferred, PyObject *write_records,
         Py_ssize_t scatter_min)
{
    long long acks, timeout;
    int rc = pw_read_header(request, &acks, &timeout);
    if (rc != 0)
        return rc;
    PyObject *topics = pw_attr(request, pw_str_topic_data);
    if (topics == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    if (!PyList_Check(topics) && !PyTuple_Check(topics)) {
        Py_DECREF(topics);
        return PW_NOT_USUAL;
    }
    if (pw_append(out, "", 1) < 0 || pw_append_int(out, acks, 2) < 0 ||
        pw_append_int(out, timeout, 4) < 0 ||
        pw_append_uvarint(out, (uint64_t)PySequence_Fast_GET_SIZE(topics) + 1) < 0) {
        Py_DECREF(topics);
        return -1;
    }
    for (Py_ssize_t t = 0; rc == 0 && t < PySequence_Fast_GET_SIZE(topics); t++) {
        /* Held while written: write_records is Python code and could change the lists. */
        PyObject *topic = Py_NewRef(PySequence_Fast_GET_ITEM(topics, t));
        rc = pw_write_topic(out, topic, deferred, write_records, scatter_min);
        Py_DECREF(topic);
    }
    Py_DECREF(topics);
    if (rc == 0 && pw_append(out, "", 1) < 0) /* the request's tagged fields */
        rc = -1;
    return rc;
}

static PyObject *
core_write_produce_request(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "write_produce_request() takes out, request, "
                                         "deferred, write_records, scatter_min");
        return NULL;
    }
    PyObject *out = args[0], *deferred = args[2];
    if (!PyByteArray_Check(out)) {
        PyErr_Format(PyExc_TypeError, "write_produce_request(): out must be a bytearray, not "
                     "%.100s", Py_TYPE(out)->tp_name);
        return NULL;
    }
    if (deferred != Py_None && !PyList_Check(deferred)) {
        PyErr_Format(PyExc_TypeError, "write_produce_request(): deferred must be a list or "
                     "None, not %.100s", Py_TYPE(deferred)->tp_name);
        return NULL;
    }
    Py_ssize_t scatter_min = PyLong_AsSsize_t(args[4]);
    if (scatter_min == -1 && PyErr_Occurred())
        return NULL;
    if (pr_init_names() < 0 || pw_init_names() < 0)
        return NULL;
    int rc = pw_write(out, args[1], deferred, args[3], scatter_min);
    if (rc < 0)
        return NULL;
    return Py_NewRef(rc == 0 ? Py_True : Py_False);
}

/* produce.new_produce_request's partitions: an object of cls (PartitionProduceData) per
 * (index, records) pair, made as object.__new__(cls) and its two fields set (into their
 * slots when cls has plain ones: see pr_slot_offset). A list or tuple of 2-tuples only;
 * anything else gives None and the Python reference makes them. */
static PwSlot pw_store_index, pw_store_records;

static Py_ssize_t
pw_store_offset(PyObject *cls, PyObject *name, PwSlot *cache)
{
    if (cache->type != cls || cache->version == 0 || cache->version != pr_version(cls)) {
        Py_XSETREF(cache->type, Py_NewRef(cls));
        cache->offset = pr_slot_offset(cls, name);
        cache->version = pr_version(cls);
    }
    return cache->offset;
}

static PyObject *
core_new_partition_data(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "new_partition_data() takes a class and the pairs");
        return NULL;
    }
    PyObject *cls = args[0], *pairs = args[1];
    if (pr_init_names() < 0 || pw_init_names() < 0)
        return NULL;
    if (!PyList_Check(pairs) && !PyTuple_Check(pairs))
        Py_RETURN_NONE;
    /* A tuple of them (the list itself could change under a collection's finalizers). */
    PyObject *items = PySequence_Tuple(pairs);
    if (items == NULL)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(items);
            Py_RETURN_NONE;
        }
    }
    Py_ssize_t index_at = pw_store_offset(cls, pr_names[PR_INDEX], &pw_store_index);
    Py_ssize_t records_at = pw_store_offset(cls, pw_str_records, &pw_store_records);
    PyObject *made = PyList_New(count);
    for (Py_ssize_t i = 0; made != NULL && i < count; i++) {
        PyObject *pair = PyTuple_GET_ITEM(items, i);
        PyObject *obj = pr_new(cls);
        PyList_SET_ITEM(made, i, obj); /* NULL until made: list_dealloc skips it */
        if (obj == NULL ||
            pr_store(obj, index_at, pr_names[PR_INDEX],
                     Py_NewRef(PyTuple_GET_ITEM(pair, 0))) < 0 ||
            pr_store(obj, records_at, pw_str_records, Py_NewRef(PyTuple_GET_ITEM(pair, 1))) < 0)
            Py_CLEAR(made);
    }
    Py_DECREF(items);
    return made;
}
