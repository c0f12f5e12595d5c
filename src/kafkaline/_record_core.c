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

/* ------------------------------------------------------------------------------ CRC-32C */

static uint32_t crc_table[8][256];
#ifdef KL_HW_CRC
static int crc_hw_available;
#endif

static void
crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc_table[0][c & 0xFF] ^ (c >> 8);
            crc_table[k][n] = c;
        }
    }
#ifdef KL_HW_CRC
    __builtin_cpu_init();
    crc_hw_available = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t
crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                      (uint32_t)p[3] << 24;
        lo ^= crc;
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
              crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
              crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
              crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#ifdef KL_HW_CRC
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = ~crc;
    /* Unrolled: a batch is tens of KiB, and the loop's own compare and branch cost as
     * much as the crc32 instruction it repeats. */
    while (n >= 32) {
        uint64_t w0, w1, w2, w3;
        memcpy(&w0, p, 8);
        memcpy(&w1, p + 8, 8);
        memcpy(&w2, p + 16, 8);
        memcpy(&w3, p + 24, 8);
        c = _mm_crc32_u64(c, w0);
        c = _mm_crc32_u64(c, w1);
        c = _mm_crc32_u64(c, w2);
        c = _mm_crc32_u64(c, w3);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}
#endif

static uint32_t
crc32c(uint32_t crc, const unsigned char *p, size_t n)
{
#ifdef KL_HW_CRC
    if (crc_hw_available)
        return crc_hw(crc, p, n);
#endif
    return crc_sw(crc, p, n);
}

/* ------------------------------------------------------------------------------ murmur2 */

static int32_t
murmur2(const unsigned char *data, Py_ssize_t length)
{
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t words = length / 4;
    for (Py_ssize_t i = 0; i < words; i++) {
        const unsigned char *w = data + i * 4;
        uint32_t k = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 |
                     (uint32_t)w[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const unsigned char *tail = data + words * 4;
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= (uint32_t)tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

/* ----------------------------------------------------------------------- Python helpers */

/* Objects from the Python side, looked up on first use (the package imports this module). */
static PyObject *record_too_large_error;
static PyObject *illegal_state_error;
static PyObject *compression_type_fn;
static PyObject *resolve_level_fn;
static PyObject *compress_fn;
static PyObject *compression_none;
static PyObject *header_room;         /* int HEADER_SIZE */
static PyObject *header_room_kwnames; /* ("header_room",) */

static PyObject *
import_attr(const char *module, const char *name)
{
    PyObject *mod = PyImport_ImportModule(module);
    if (mod == NULL)
        return NULL;
    PyObject *attr = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return attr;
}

static int
ensure_python_side(void)
{
    if (compress_fn != NULL)
        return 0;
    if ((record_too_large_error = import_attr("kafkaline.errors", "RecordTooLargeError")) == NULL)
        return -1;
    if ((illegal_state_error = import_attr("kafkaline.errors", "IllegalStateError")) == NULL)
        return -1;
    if ((compression_type_fn = import_attr("kafkaline.record.compression", "compression_type")) ==
        NULL)
        return -1;
    if ((resolve_level_fn =
             import_attr("kafkaline.record.compression", "resolve_compression_level")) == NULL)
        return -1;
    PyObject *ctype = import_attr("kafkaline.record.compression", "CompressionType");
    if (ctype == NULL)
        return -1;
    compression_none = PyObject_GetAttrString(ctype, "NONE");
    Py_DECREF(ctype);
    if (compression_none == NULL)
        return -1;
    if ((header_room = PyLong_FromLong(HEADER_SIZE)) == NULL)
        return -1;
    if ((header_room_kwnames = Py_BuildValue("(s)", "header_room")) == NULL)
        return -1;
    if ((compress_fn = import_attr("kafkaline.record.compression", "compress")) == NULL)
        return -1;
    return 0;
}

/* A borrowed view of bytes-like data, as the Python builder's as_bytes() accepts it (bytes,
 * bytearray, memoryview; a bytearray or memoryview is copied when encoded, as there). */
typedef struct {
    const char *data;
    Py_ssize_t size;
    Py_buffer view;
    int has_view;
} BytesArg;

static int
bytes_arg(PyObject *obj, const char *what, BytesArg *out)
{
    out->has_view = 0;
    if (PyBytes_Check(obj)) {
        out->data = PyBytes_AS_STRING(obj);
        out->size = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyByteArray_Check(obj) || PyMemoryView_Check(obj)) {
        if (PyObject_GetBuffer(obj, &out->view, PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        out->has_view = 1;
        out->data = out->view.buf;
        out->size = out->view.len;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.200s", what, Py_TYPE(obj)->tp_name);
    return -1;
}

static void
bytes_arg_release(BytesArg *arg)
{
    if (arg->has_view) {
        PyBuffer_Release(&arg->view);
        arg->has_view = 0;
    }
}

/* An int timestamp outside int64 sets *out_of_range: as in the reference, such a record is
 * taken and the batch fails when sealed (the accumulator fails that batch alone). */
static int
as_timestamp(PyObject *obj, int64_t *out, int *out_of_range)
{
    if (PyLong_CheckExact(obj)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow) {
            *out_of_range = 1;
            *out = 0;
            return 0;
        }
        if (v == -1 && PyErr_Occurred())
            return -1;
        *out = v;
        return 0;
    }
    PyObject *index = PyNumber_Index(obj);
    if (index == NULL) {
        PyErr_Format(PyExc_TypeError, "timestamp must be int milliseconds, not %.200s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int rc = as_timestamp(index, out, out_of_range);
    Py_DECREF(index);
    return rc;
}

/* value as an int in [lo, hi], else ValueError "name value is outside lo..hi" (the reference's
 * message). */
static int
check_range(const char *name, PyObject *value, long long lo, long long hi, long long *out)
{
    if (PyLong_Check(value)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (!overflow && v >= lo && v <= hi) {
            *out = v;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "%s %R is outside %lld..%lld", name, value, lo, hi);
    return -1;
}

/* --------------------------------------------------------------------------- varints */

static inline uint64_t
zigzag(int64_t n)
{
    return ((uint64_t)n << 1) ^ (uint64_t)(n >> 63);
}

static inline int
varint_size(uint64_t z)
{
    int size = 1;
    while (z >= 0x80) {
        z >>= 7;
        size++;
    }
    return size;
}

static inline unsigned char *
put_varint(unsigned char *p, uint64_t z)
{
    while (z >= 0x80) {
        *p++ = (unsigned char)(z | 0x80);
        z >>= 7;
    }
    *p++ = (unsigned char)z;
    return p;
}

static inline void
put_be16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static inline void
put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline void
put_be64(unsigned char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* ----------------------------------------------------------------------- the builder */

typedef struct {
    PyObject_HEAD
    PyObject *buffer;          /* bytes: header room + records; NULL once compressed */
    Py_ssize_t used;           /* bytes of buffer in use, header room included */
    Py_ssize_t capacity;
    int64_t count;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int closed;
    int sealed;
    int buffer_returned;       /* build_buffer() handed the buffer out: never change it */
    int has_log_append_time;
    int64_t log_append_time;
    Py_ssize_t size_limit;
    Py_ssize_t limit;          /* size_limit scaled by the compression ratio */
    Py_ssize_t memory_cap;     /* buffer memory the batch holds: the appender stays within */
    double ratio;
    PyObject *compression;     /* CompressionType member */
    long compression_id;
    PyObject *compression_level; /* None or int */
    int64_t base_offset;
    int32_t partition_leader_epoch;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int16_t attributes;
    PyObject *payload;         /* header room + compressed records, after seal() */
    Py_ssize_t uncompressed_size;
    PyObject *built;           /* cached build_buffer() result */
    PyObject *bad_timestamp;   /* str: why seal() must fail, for a timestamp outside int64 */
} Builder;

/* The buffer's next capacity for `need` bytes: small batches grow by doubling up to
 * GROWN_CAPACITY (a batch of a few small records stays small, as with many partitions);
 * past that, or at once when the first record is bigger than INITIAL_CAPACITY, it takes
 * the buffer memory its batch holds (memory_cap), up to the batch's limit: growing a large
 * batch by doubling copied it about once more, and a buffer much larger than the memory
 * held would let the process outgrow buffer_memory. */
static Py_ssize_t
builder_capacity_for(const Builder *self, Py_ssize_t need)
{
    Py_ssize_t capacity = self->capacity;
    if (capacity == 0 && need <= INITIAL_CAPACITY)
        return INITIAL_CAPACITY;
    if (capacity != 0 && capacity < GROWN_CAPACITY) {
        while (capacity < need && capacity < GROWN_CAPACITY)
            capacity *= 2;
        if (capacity >= need)
            return capacity;
    }
    Py_ssize_t target = self->memory_cap < self->limit ? self->memory_cap : self->limit;
    /* At least double (up to the limit): a pool smaller than batch_size tops a batch up by
     * what each record needs, and growing to just that would copy the batch every time. */
    Py_ssize_t doubled = capacity <= self->limit / 2 ? capacity * 2 : self->limit;
    if (target < doubled)
        target = doubled;
    return target > need ? target : need;
}

static int
builder_reserve(Builder *self, Py_ssize_t extra)
{
    Py_ssize_t need = self->used + extra;
    if (need <= self->capacity)
        return 0;
    Py_ssize_t capacity = builder_capacity_for(self, need);
    if (self->buffer == NULL) {
        self->buffer = PyBytes_FromStringAndSize(NULL, capacity);
        if (self->buffer == NULL)
            return -1;
    }
    else if (_PyBytes_Resize(&self->buffer, capacity) < 0) {
        return -1;
    }
    self->capacity = capacity;
    return 0;
}

static Py_ssize_t
records_room(Py_ssize_t size_limit, double ratio)
{
    return (Py_ssize_t)((double)(size_limit - HEADER_SIZE) / ratio);
}

static int
Builder_init(Builder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"batch_size_limit", "compression", "compression_level",
                             "estimated_compression_ratio", "base_offset",
                             "partition_leader_epoch", "producer_id", "producer_epoch",
                             "base_sequence", "is_transactional", "is_control",
                             "timestamp_type", "log_append_time", NULL};
    Py_ssize_t size_limit = 16384;
    PyObject *compression = NULL, *level = Py_None, *base_offset = NULL, *ple = NULL;
    PyObject *producer_id = NULL, *producer_epoch = NULL, *base_sequence = NULL;
    PyObject *timestamp_type = NULL, *log_append_time = Py_None;
    double ratio = 1.0;
    int transactional = 0, control = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n$OOdOOOOOppOO", kwlist, &size_limit,
                                     &compression, &level, &ratio, &base_offset, &ple,
                                     &producer_id, &producer_epoch, &base_sequence,
                                     &transactional, &control, &timestamp_type,
                                     &log_append_time))
        return -1;
    if (ensure_python_side() < 0)
        return -1;
    if (self->buffer != NULL || self->payload != NULL) {
        PyErr_SetString(PyExc_TypeError, "RecordBatchBuilder is initialised once");
        return -1;
    }
    PyObject *codec;
    if (compression == NULL || compression == compression_none) {
        codec = Py_NewRef(compression_none);
    }
    else {
        codec = PyObject_CallOneArg(compression_type_fn, compression);
        if (codec == NULL)
            return -1;
    }
    Py_XSETREF(self->compression, codec);
    self->compression_id = PyLong_AsLong(codec);
    if (self->compression_id == -1 && PyErr_Occurred())
        return -1;
    if (level != Py_None) {
        PyObject *checked = PyObject_CallFunctionObjArgs(resolve_level_fn, codec, level, NULL);
        if (checked == NULL)
            return -1;
        Py_DECREF(checked);
    }
    Py_XSETREF(self->compression_level, Py_NewRef(level));
    if (!(size_limit > HEADER_SIZE && size_limit <= MAX_BATCH_SIZE)) {
        PyErr_Format(PyExc_ValueError, "batch_size_limit %zd is outside %d..%lld", size_limit,
                     HEADER_SIZE + 1, (long long)MAX_BATCH_SIZE);
        return -1;
    }
    if (!(ratio > 0.0 && ratio <= 1.0)) {
        PyObject *r = PyFloat_FromDouble(ratio);
        if (r != NULL) {
            PyErr_Format(PyExc_ValueError, "estimated_compression_ratio %R is outside (0, 1]", r);
            Py_DECREF(r);
        }
        return -1;
    }
    int log_append = 0;
    if (timestamp_type != NULL) {
        long tt = PyLong_AsLong(timestamp_type);
        if (tt == -1 && PyErr_Occurred())
            return -1;
        log_append = tt == 1;
    }
    self->has_log_append_time = 0;
    if (log_append) {
        long long lat;
        if (log_append_time == Py_None) {
            PyErr_SetString(PyExc_ValueError, "LOG_APPEND_TIME batches need log_append_time");
            return -1;
        }
        if (check_range("log_append_time", log_append_time, INT64_MIN, INT64_MAX, &lat) < 0)
            return -1;
        self->has_log_append_time = 1;
        self->log_append_time = lat;
    }
    self->size_limit = size_limit;
    self->memory_cap = (Py_ssize_t)MAX_BATCH_SIZE;
    self->ratio = ratio;
    self->limit = ratio == 1.0 ? size_limit : HEADER_SIZE + records_room(size_limit, ratio);
    long long v;
    self->base_offset = 0;
    if (base_offset != NULL) {
        if (check_range("base_offset", base_offset, INT64_MIN, INT64_MAX, &v) < 0)
            return -1;
        self->base_offset = v;
    }
    self->partition_leader_epoch = -1;
    if (ple != NULL) {
        if (check_range("partition_leader_epoch", ple, INT32_MIN, INT32_MAX, &v) < 0)
            return -1;
        self->partition_leader_epoch = (int32_t)v;
    }
    self->producer_id = -1;
    self->producer_epoch = -1;
    self->base_sequence = -1;
    if (producer_id != NULL) {
        if (check_range("producer_id", producer_id, INT64_MIN, INT64_MAX, &v) < 0)
            return -1;
        self->producer_id = v;
    }
    if (producer_epoch != NULL) {
        if (check_range("producer_epoch", producer_epoch, INT16_MIN, INT16_MAX, &v) < 0)
            return -1;
        self->producer_epoch = (int16_t)v;
    }
    if (base_sequence != NULL) {
        if (check_range("base_sequence", base_sequence, INT32_MIN, INT32_MAX, &v) < 0)
            return -1;
        self->base_sequence = (int32_t)v;
    }
    self->attributes = (int16_t)(self->compression_id | (log_append ? ATTR_TIMESTAMP_TYPE : 0) |
                                 (transactional ? ATTR_TRANSACTIONAL : 0) |
                                 (control ? ATTR_CONTROL : 0));
    self->used = HEADER_SIZE;
    self->capacity = 0;
    self->count = 0;
    self->closed = 0;
    self->sealed = 0;
    self->buffer_returned = 0;
    self->uncompressed_size = 0;
    return 0;
}

static int
Builder_traverse(Builder *self, visitproc visit, void *arg)
{
    Py_VISIT(self->compression);
    Py_VISIT(self->compression_level);
    return 0;
}

static void
Builder_dealloc(Builder *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->buffer);
    Py_CLEAR(self->payload);
    Py_CLEAR(self->built);
    Py_CLEAR(self->bad_timestamp);
    Py_CLEAR(self->compression);
    Py_CLEAR(self->compression_level);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Builder_clear(Builder *self)
{
    Py_CLEAR(self->compression);
    Py_CLEAR(self->compression_level);
    return 0;
}

/* The header_count and headers fields, encoded into a new bytes object (NULL on error). */
static PyObject *
encode_headers(PyObject *headers)
{
    PyObject *seq = PySequence_Fast(headers, "headers must be a sequence of (str, bytes) pairs");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t size = varint_size(zigzag(n));
    /* first pass: sizes and checks */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = items[i];
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyObject *fast = PySequence_Fast(pair, "a header must be a (str, bytes) pair");
            if (fast == NULL)
                goto error;
            Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
            Py_DECREF(fast);
            if (len != 2) {
                PyErr_Format(PyExc_ValueError,
                             "a header must be a (str, bytes) pair, not %zd items", len);
                goto error;
            }
        }
        PyObject *key = PySequence_GetItem(pair, 0);
        if (key == NULL)
            goto error;
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "header key must be str, not %.200s",
                         Py_TYPE(key)->tp_name);
            Py_DECREF(key);
            goto error;
        }
        Py_ssize_t klen;
        if (PyUnicode_AsUTF8AndSize(key, &klen) == NULL) {
            Py_DECREF(key);
            goto error;
        }
        Py_DECREF(key);
        size += varint_size(zigzag(klen)) + klen;
        PyObject *value = PySequence_GetItem(pair, 1);
        if (value == NULL)
            goto error;
        if (value == Py_None) {
            size += 1;
        }
        else {
            BytesArg arg;
            if (bytes_arg(value, "header value", &arg) < 0) {
                Py_DECREF(value);
                goto error;
            }
            size += varint_size(zigzag(arg.size)) + arg.size;
            bytes_arg_release(&arg);
        }
        Py_DECREF(value);
    }
    PyObject *block = PyBytes_FromStringAndSize(NULL, size);
    if (block == NULL)
        goto error;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(block);
    p = put_varint(p, zigzag(n));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PySequence_GetItem(items[i], 0);
        Py_ssize_t klen;
        const char *kdata = PyUnicode_AsUTF8AndSize(key, &klen);
        p = put_varint(p, zigzag(klen));
        memcpy(p, kdata, klen);
        p += klen;
        Py_DECREF(key);
        PyObject *value = PySequence_GetItem(items[i], 1);
        if (value == Py_None) {
            p = put_varint(p, zigzag(-1));
        }
        else {
            BytesArg arg;
            if (bytes_arg(value, "header value", &arg) < 0) { /* changed meanwhile */
                Py_DECREF(value);
                Py_DECREF(block);
                goto error;
            }
            p = put_varint(p, zigzag(arg.size));
            memcpy(p, arg.data, arg.size);
            p += arg.size;
            bytes_arg_release(&arg);
        }
        Py_DECREF(value);
    }
    Py_DECREF(seq);
    return block;
error:
    Py_DECREF(seq);
    return NULL;
}

/* Results of try_append. */
#define APPENDED 0
#define NO_ROOM 1
#define FAILED -1

/* Encode one record into the batch if it fits under `limit` (exactly; the first record always
 * fits, up to the largest batch). */
static int
try_append(Builder *self, int64_t timestamp, const char *key, Py_ssize_t key_size,
           const char *value, Py_ssize_t value_size, const char *header_block,
           Py_ssize_t header_size, Py_ssize_t limit)
{
    int64_t base = self->count ? self->base_timestamp : timestamp;
    int64_t delta;
    if (__builtin_sub_overflow(timestamp, base, &delta)) {
        /* The reference fails the batch when it encodes the delta: at seal. */
        if (self->bad_timestamp == NULL) {
            self->bad_timestamp = PyUnicode_FromFormat(
                "timestamp %lld is too far from the batch's first, %lld, for an int64 delta",
                (long long)timestamp, (long long)base);
            if (self->bad_timestamp == NULL)
                return FAILED;
        }
        delta = 0;
    }
    if (self->count >= INT32_MAX) {
        return NO_ROOM;
    }
    uint64_t ts_z = zigzag(delta);
    uint64_t off_z = zigzag(self->count);
    uint64_t key_z = key == NULL ? 1 : zigzag(key_size);
    uint64_t value_z = value == NULL ? 1 : zigzag(value_size);
    int64_t body = 1 + varint_size(ts_z) + varint_size(off_z) + varint_size(key_z) +
                   (key == NULL ? 0 : key_size) + varint_size(value_z) +
                   (value == NULL ? 0 : value_size) + (header_block ? header_size : 1);
    uint64_t body_z = zigzag(body);
    int64_t total = varint_size(body_z) + body;
    if (self->count) {
        if (self->used + total > limit)
            return NO_ROOM;
    }
    else if (HEADER_SIZE + total > MAX_BATCH_SIZE) {
        PyErr_Format(record_too_large_error,
                     "a record of %lld bytes cannot fit a record batch (at most %lld bytes)",
                     (long long)total, (long long)MAX_BATCH_SIZE);
        return FAILED;
    }
    if (builder_reserve(self, (Py_ssize_t)total) < 0)
        return FAILED;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(self->buffer) + self->used;
    p = put_varint(p, body_z);
    *p++ = 0;
    p = put_varint(p, ts_z);
    p = put_varint(p, off_z);
    p = put_varint(p, key_z);
    if (key != NULL) {
        memcpy(p, key, key_size);
        p += key_size;
    }
    p = put_varint(p, value_z);
    if (value != NULL) {
        memcpy(p, value, value_size);
        p += value_size;
    }
    if (header_block != NULL) {
        memcpy(p, header_block, header_size);
        p += header_size;
    }
    else {
        *p++ = 0;
    }
    self->used += (Py_ssize_t)total;
    if (self->count == 0) {
        self->base_timestamp = timestamp;
        self->max_timestamp = timestamp;
    }
    else if (timestamp > self->max_timestamp) {
        self->max_timestamp = timestamp;
    }
    self->count++;
    return APPENDED;
}

/* The reference sizes a record by len(): a bytes subclass whose len() says it cannot fit any
 * batch is refused as there, before its (real) bytes are looked at. */
static int
declared_too_large(PyObject *obj)
{
    if (obj == Py_None || PyBytes_CheckExact(obj))
        return 0;
    Py_ssize_t declared = PyObject_Length(obj);
    if (declared < 0)
        return -1;
    if (HEADER_SIZE + (int64_t)declared > MAX_BATCH_SIZE) {
        PyErr_Format(record_too_large_error,
                     "a record of about %zd bytes cannot fit a record batch (at most %lld bytes)",
                     declared, (long long)MAX_BATCH_SIZE);
        return -1;
    }
    return 0;
}

/* append() / append_many()'s record, its timestamp converted (out_of_range: outside int64):
 * convert the rest as the reference does, then try_append. */
/* append_converted()'s record with a key or value to convert, or headers. */
static int
append_converting(Builder *self, int64_t timestamp, PyObject *key_obj, PyObject *value_obj,
                  PyObject *headers, Py_ssize_t limit)
{
    BytesArg key = {NULL, 0}, value = {NULL, 0};
    key.has_view = value.has_view = 0;
    PyObject *block = NULL;
    int rc = FAILED;
    if (key_obj != Py_None && bytes_arg(key_obj, "key", &key) < 0)
        goto done;
    if (value_obj != Py_None && bytes_arg(value_obj, "value", &value) < 0)
        goto done;
    if (declared_too_large(key_obj) || declared_too_large(value_obj))
        goto done;
    if (headers != NULL && headers != Py_None) {
        int truth = PyObject_IsTrue(headers);
        if (truth < 0)
            goto done;
        if (truth && (block = encode_headers(headers)) == NULL)
            goto done;
    }
    rc = try_append(self, timestamp, key_obj == Py_None ? NULL : key.data, key.size,
                    value_obj == Py_None ? NULL : value.data, value.size,
                    block ? PyBytes_AS_STRING(block) : NULL, block ? PyBytes_GET_SIZE(block) : 0,
                    limit);
done:
    bytes_arg_release(&key);
    bytes_arg_release(&value);
    Py_XDECREF(block);
    return rc;
}

static int
append_converted(Builder *self, int64_t timestamp, int out_of_range, PyObject *ts_obj,
                 PyObject *key_obj, PyObject *value_obj, PyObject *headers, Py_ssize_t limit)
{
    int rc;
    int no_key = key_obj == Py_None, no_value = value_obj == Py_None;
    if ((headers == NULL || headers == Py_None) && (no_key || PyBytes_CheckExact(key_obj)) &&
        (no_value || PyBytes_CheckExact(value_obj)))
        /* The usual record (send_batch()'s lists): bytes or None, nothing to convert. */
        rc = try_append(self, timestamp, no_key ? NULL : PyBytes_AS_STRING(key_obj),
                        no_key ? 0 : PyBytes_GET_SIZE(key_obj),
                        no_value ? NULL : PyBytes_AS_STRING(value_obj),
                        no_value ? 0 : PyBytes_GET_SIZE(value_obj), NULL, 0, limit);
    else
        rc = append_converting(self, timestamp, key_obj, value_obj, headers, limit);
    if (rc == APPENDED && out_of_range && self->bad_timestamp == NULL) {
        self->bad_timestamp = PyUnicode_FromFormat("timestamp %R is outside int64", ts_obj);
        if (self->bad_timestamp == NULL)
            rc = FAILED;
    }
    return rc;
}

static int
append_objects(Builder *self, PyObject *ts_obj, PyObject *key_obj, PyObject *value_obj,
               PyObject *headers, Py_ssize_t limit)
{
    int64_t timestamp;
    int out_of_range = 0;
    if (as_timestamp(ts_obj, &timestamp, &out_of_range) < 0)
        return FAILED;
    return append_converted(self, timestamp, out_of_range, ts_obj, key_obj, value_obj, headers,
                            limit);
}

static PyObject *
Builder_append(Builder *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *names[] = {"timestamp", "key", "value", "headers"};
    PyObject *argv[4] = {NULL, NULL, NULL, Py_None};
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 4 || (nargs + nkw) < 3) {
        PyErr_SetString(PyExc_TypeError, "append() takes timestamp, key, value[, headers]");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        argv[i] = args[i];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        int found = 0;
        for (int j = 0; j < 4 && kw; j++) {
            if (strcmp(kw, names[j]) == 0) {
                argv[j] = args[nargs + i];
                found = 1;
            }
        }
        if (!found) {
            PyErr_Format(PyExc_TypeError, "append() got an unexpected keyword argument '%s'", kw);
            return NULL;
        }
    }
    if (argv[0] == NULL || argv[1] == NULL || argv[2] == NULL) {
        PyErr_SetString(PyExc_TypeError, "append() takes timestamp, key, value[, headers]");
        return NULL;
    }
    if (self->closed)
        Py_RETURN_NONE;
    int rc = append_objects(self, argv[0], argv[1], argv[2], argv[3], self->limit);
    if (rc == FAILED)
        return NULL;
    if (rc == NO_ROOM) {
        /* A builder that refuses a record for its size closes for appends (as Java's). */
        self->closed = 1;
        Py_RETURN_NONE;
    }
    return PyLong_FromLongLong(self->count - 1);
}

/* append_many()'s positions: none (every index from start), a buffer of Py_ssize_t (the
 * grouping's, kept compact) or a list or tuple of ints. */
typedef struct {
    Py_buffer view;
    int has_view;
    PyObject *seq;
    const Py_ssize_t *items;
    PyObject **objects;
    Py_ssize_t count;
} Positions;

static int
positions_open(PyObject *obj, Positions *out)
{
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        if ((out->seq = PySequence_Fast(obj, "positions must be a sequence")) == NULL)
            return -1;
        out->objects = PySequence_Fast_ITEMS(out->seq);
        out->count = PySequence_Fast_GET_SIZE(out->seq);
        return 0;
    }
    if (PyObject_CheckBuffer(obj) &&
        PyObject_GetBuffer(obj, &out->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        out->has_view = 1;
        const char *format = out->view.format ? out->view.format : "B";
        if (out->view.itemsize == (Py_ssize_t)sizeof(Py_ssize_t) &&
            (strcmp(format, "n") == 0 || strcmp(format, "@n") == 0)) {
            out->items = (const Py_ssize_t *)out->view.buf;
            out->count = out->view.len / out->view.itemsize;
            return 0;
        }
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "positions must be a list of ints or a buffer of format 'n', not %.200s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

static void
positions_close(Positions *p)
{
    if (p->has_view)
        PyBuffer_Release(&p->view);
    Py_CLEAR(p->seq);
}

/* The input index of the j-th record (0 <= index < n), or -1 with an error set. */
static Py_ssize_t
position_at(const Positions *p, Py_ssize_t j, Py_ssize_t n)
{
    Py_ssize_t at = p->items ? p->items[j] : p->objects ? PyLong_AsSsize_t(p->objects[j]) : j;
    if (at == -1 && PyErr_Occurred())
        return -1;
    if (at < 0 || at >= n) {
        PyErr_Format(PyExc_IndexError, "position %zd is outside 0..%zd", at, n - 1);
        return -1;
    }
    return at;
}

static PyObject *
Builder_append_many(Builder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"keys", "values", "timestamps", "headers", "start", "positions",
                             NULL};
    PyObject *keys, *values, *timestamps, *headers = Py_None, *positions = Py_None;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|O$nO", kwlist, &keys, &values,
                                     &timestamps, &headers, &start, &positions))
        return NULL;
    PyObject *kseq = NULL, *vseq = NULL, *tseq = NULL, *hseq = NULL;
    Positions order = {.has_view = 0, .seq = NULL, .items = NULL, .objects = NULL};
    PyObject *result = NULL;
    Py_ssize_t taken = 0;
    if ((kseq = PySequence_Fast(keys, "keys must be a sequence")) == NULL)
        goto done;
    if ((vseq = PySequence_Fast(values, "values must be a sequence")) == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(vseq);
    if (headers != Py_None &&
        (hseq = PySequence_Fast(headers, "headers must be a sequence")) == NULL)
        goto done;
    if (PySequence_Fast_GET_SIZE(kseq) != n ||
        (hseq != NULL && PySequence_Fast_GET_SIZE(hseq) != n)) {
        PyErr_SetString(PyExc_ValueError, "keys, values and headers must have the same length");
        goto done;
    }
    int one_timestamp = PyLong_Check(timestamps);
    if (!one_timestamp) {
        if ((tseq = PySequence_Fast(timestamps, "timestamps must be one int or one per record")) ==
            NULL)
            goto done;
        if (PySequence_Fast_GET_SIZE(tseq) != n) {
            PyErr_SetString(PyExc_ValueError, "timestamps must be one int or one per record");
            goto done;
        }
    }
    order.count = n;
    if (positions != Py_None && positions_open(positions, &order) < 0)
        goto done;
    Py_ssize_t count = order.count;
    if (start < 0 || start > count) {
        PyErr_Format(PyExc_ValueError, "start %zd is outside 0..%zd", start, count);
        goto done;
    }
    PyObject **k = PySequence_Fast_ITEMS(kseq);
    PyObject **v = PySequence_Fast_ITEMS(vseq);
    PyObject **t = tseq ? PySequence_Fast_ITEMS(tseq) : NULL;
    PyObject **h = hseq ? PySequence_Fast_ITEMS(hseq) : NULL;
    /* One timestamp for all is converted once, not per record. */
    int64_t timestamp = 0;
    int out_of_range = 0;
    if (one_timestamp && start < count && !self->closed &&
        as_timestamp(timestamps, &timestamp, &out_of_range) < 0)
        goto done;
    for (Py_ssize_t j = start; j < count && !self->closed; j++) {
        Py_ssize_t i = position_at(&order, j, n);
        if (i < 0)
            goto done;
        int rc = t ? append_objects(self, t[i], k[i], v[i], h ? h[i] : NULL, self->limit)
                   : append_converted(self, timestamp, out_of_range, timestamps, k[i], v[i],
                                      h ? h[i] : NULL, self->limit);
        if (rc == FAILED)
            goto done;
        if (rc == NO_ROOM)
            break;
        taken++;
    }
    result = PyLong_FromSsize_t(taken);
done:
    positions_close(&order);
    Py_XDECREF(kseq);
    Py_XDECREF(vseq);
    Py_XDECREF(tseq);
    Py_XDECREF(hseq);
    return result;
}

static PyObject *
Builder_open_state(Builder *self, PyObject *Py_UNUSED(ignored))
{
    if (self->closed || self->count == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nLL)", self->limit - self->used, (long long)self->count,
                         (long long)self->base_timestamp);
}

static PyObject *
Builder_append_encoded(Builder *self, PyObject *args)
{
    PyObject *records;
    long long count, first_timestamp, max_timestamp;
    if (!PyArg_ParseTuple(args, "OLLL:append_encoded", &records, &count, &first_timestamp,
                          &max_timestamp))
        return NULL;
    if (ensure_python_side() < 0)
        return NULL;
    if (self->closed) {
        PyErr_SetString(illegal_state_error, "cannot append to a closed record batch");
        return NULL;
    }
    if (count <= 0) {
        PyErr_Format(PyExc_ValueError, "count %lld must be positive", count);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(records, "records must be a sequence of bytes");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len = PyObject_Length(items[i]);
        if (len < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        size += len;
    }
    if (self->count == 0 && HEADER_SIZE + (int64_t)size > MAX_BATCH_SIZE) {
        PyErr_Format(record_too_large_error,
                     "%lld records of %zd bytes cannot fit a record batch (at most %lld bytes)",
                     count, size, (long long)MAX_BATCH_SIZE);
        Py_DECREF(seq);
        return NULL;
    }
    if (builder_reserve(self, size) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer(items[i], &view, PyBUF_C_CONTIGUOUS) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        memcpy(PyBytes_AS_STRING(self->buffer) + self->used, view.buf, view.len);
        self->used += view.len;
        PyBuffer_Release(&view);
    }
    Py_DECREF(seq);
    if (self->count == 0) {
        self->base_timestamp = first_timestamp;
        self->max_timestamp = max_timestamp;
    }
    else if (max_timestamp > self->max_timestamp) {
        self->max_timestamp = max_timestamp;
    }
    self->count += count;
    Py_RETURN_NONE;
}

static PyObject *
Builder_close_for_appends(Builder *self, PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    Py_RETURN_NONE;
}

/* The records of a buffer as a read-only memoryview for the codec: no copy, and the view
 * keeps the buffer alive should the codec hold on to it. */
static PyObject *
records_view(PyObject *buffer, Py_ssize_t used)
{
    PyObject *whole = PyMemoryView_FromObject(buffer);
    if (whole == NULL)
        return NULL;
    PyObject *view = PySequence_GetSlice(whole, HEADER_SIZE, used);
    Py_DECREF(whole);
    return view;
}

/* compress(codec, records, level, header_room=HEADER_SIZE): the batch's wire bytes with the
 * header still to write, so build_buffer() writes it in place instead of copying the
 * compressed records behind it. Only a bytes object no one else holds is written into. */
static PyObject *
compress_with_header_room(Builder *self, PyObject *records)
{
    PyObject *args[] = {self->compression, records, self->compression_level, header_room};
    PyObject *payload = PyObject_Vectorcall(compress_fn, args, 3, header_room_kwnames);
    if (payload == NULL)
        return NULL;
    if (!PyBytes_CheckExact(payload) || Py_REFCNT(payload) != 1) {
        /* Not bytes, or held elsewhere too: write into a copy. */
        Py_buffer view;
        int got = PyObject_GetBuffer(payload, &view, PyBUF_C_CONTIGUOUS);
        Py_DECREF(payload);
        if (got < 0)
            return NULL;
        payload = PyBytes_FromStringAndSize(view.buf, view.len);
        PyBuffer_Release(&view);
        if (payload == NULL)
            return NULL;
    }
    if (PyBytes_GET_SIZE(payload) < HEADER_SIZE) {
        PyErr_SetString(PyExc_RuntimeError, "compress() returned no room for the batch header");
        Py_DECREF(payload);
        return NULL;
    }
    return payload;
}

static int
builder_seal(Builder *self)
{
    if (self->sealed)
        return 0;
    if (ensure_python_side() < 0)
        return -1;
    if (self->count == 0) {
        PyErr_SetString(illegal_state_error, "cannot seal a record batch without records");
        return -1;
    }
    if (self->bad_timestamp != NULL) {
        PyErr_SetObject(PyExc_ValueError, self->bad_timestamp);
        return -1;
    }
    self->closed = 1;
    Py_ssize_t records = self->used - HEADER_SIZE;
    if (self->compression_id) {
        PyObject *data = records_view(self->buffer, self->used);
        if (data == NULL)
            return -1;
        PyObject *payload = compress_with_header_room(self, data);
        Py_DECREF(data);
        if (payload == NULL)
            return -1;
        if ((int64_t)PyBytes_GET_SIZE(payload) > MAX_BATCH_SIZE) {
            PyErr_Format(record_too_large_error,
                         "record batch of %lld bytes exceeds the %lld-byte maximum",
                         (long long)PyBytes_GET_SIZE(payload), (long long)MAX_BATCH_SIZE);
            Py_DECREF(payload);
            return -1;
        }
        self->payload = payload;
        Py_CLEAR(self->buffer); /* the compressed copy holds everything now */
        self->capacity = 0;
    }
    if (self->has_log_append_time)
        self->max_timestamp = self->log_append_time;
    self->uncompressed_size = records;
    self->sealed = 1;
    return 0;
}

static PyObject *
Builder_seal(Builder *self, PyObject *Py_UNUSED(ignored))
{
    if (builder_seal(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Builder_set_producer_state(Builder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"producer_id", "producer_epoch", "base_sequence", NULL};
    PyObject *pid, *epoch, *seq;
    long long a, b, c;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:set_producer_state", kwlist, &pid, &epoch,
                                     &seq))
        return NULL;
    if (check_range("producer_id", pid, INT64_MIN, INT64_MAX, &a) < 0 ||
        check_range("producer_epoch", epoch, INT16_MIN, INT16_MAX, &b) < 0 ||
        check_range("base_sequence", seq, INT32_MIN, INT32_MAX, &c) < 0)
        return NULL;
    self->producer_id = a;
    self->producer_epoch = (int16_t)b;
    self->base_sequence = (int32_t)c;
    Py_CLEAR(self->built);
    Py_RETURN_NONE;
}

static void
write_header(Builder *self, unsigned char *p, Py_ssize_t payload_size)
{
    put_be64(p, (uint64_t)self->base_offset);
    put_be32(p + 8, (uint32_t)(HEADER_SIZE - LOG_OVERHEAD + payload_size));
    put_be32(p + 12, (uint32_t)self->partition_leader_epoch);
    p[16] = 2;
    put_be16(p + 21, (uint16_t)self->attributes);
    put_be32(p + 23, (uint32_t)(self->count - 1));
    put_be64(p + 27, (uint64_t)self->base_timestamp);
    put_be64(p + 35, (uint64_t)self->max_timestamp);
    put_be64(p + 43, (uint64_t)self->producer_id);
    put_be16(p + 51, (uint16_t)self->producer_epoch);
    put_be32(p + 53, (uint32_t)self->base_sequence);
    put_be32(p + 57, (uint32_t)self->count);
    put_be32(p + CRC_OFFSET, crc32c(0, p + CRC_SPAN_START,
                                    (size_t)(HEADER_SIZE + payload_size - CRC_SPAN_START)));
}

static PyObject *
Builder_build_buffer(Builder *self, PyObject *Py_UNUSED(ignored))
{
    if (self->built != NULL)
        return Py_NewRef(self->built);
    if (builder_seal(self) < 0)
        return NULL;
    PyObject *wire;
    if (self->payload != NULL && !self->buffer_returned) {
        /* The compressed records behind their header room: no copy either. */
        wire = Py_NewRef(self->payload);
        self->buffer_returned = 1;
    }
    else if (self->payload != NULL) {
        wire = PyBytes_FromStringAndSize(PyBytes_AS_STRING(self->payload),
                                         PyBytes_GET_SIZE(self->payload));
        if (wire == NULL)
            return NULL;
    }
    else if (!self->buffer_returned) {
        /* The buffer itself, trimmed: no copy of the records. */
        if (self->capacity != self->used) {
            if (_PyBytes_Resize(&self->buffer, self->used) < 0)
                return NULL;
            self->capacity = self->used;
        }
        wire = Py_NewRef(self->buffer);
        self->buffer_returned = 1;
    }
    else {
        /* Rebuilt (new producer state for a retry): what was returned before is never
         * changed under its holder; this copy is written instead. */
        wire = PyBytes_FromStringAndSize(PyBytes_AS_STRING(self->buffer), self->used);
        if (wire == NULL)
            return NULL;
    }
    write_header(self, (unsigned char *)PyBytes_AS_STRING(wire),
                 PyBytes_GET_SIZE(wire) - HEADER_SIZE);
    self->built = Py_NewRef(wire);
    return wire;
}

static PyObject *
Builder_records_room(PyObject *Py_UNUSED(cls), PyObject *args)
{
    Py_ssize_t limit;
    double ratio = 1.0;
    if (!PyArg_ParseTuple(args, "n|d:records_room", &limit, &ratio))
        return NULL;
    return PyLong_FromSsize_t(records_room(limit, ratio));
}

static Py_ssize_t
Builder_len(Builder *self)
{
    return (Py_ssize_t)self->count;
}

static PyObject *
Builder_get_is_closed(Builder *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->closed);
}

static PyObject *
Builder_get_is_sealed(Builder *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->sealed);
}

static PyObject *
Builder_get_is_full(Builder *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->closed || (self->count && self->used >= self->limit));
}

static PyObject *
Builder_get_estimated_size(Builder *self, void *Py_UNUSED(c))
{
    if (self->payload != NULL)
        return PyLong_FromSsize_t(PyBytes_GET_SIZE(self->payload));
    if (self->sealed)
        return PyLong_FromSsize_t(self->used);
    Py_ssize_t records = self->used - HEADER_SIZE;
    return PyLong_FromSsize_t(HEADER_SIZE + (Py_ssize_t)((double)records * self->ratio));
}

static PyObject *
Builder_get_uncompressed_size(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(self->uncompressed_size);
}

static PyObject *
Builder_get_compression(Builder *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->compression);
}

static PyObject *
Builder_get_size_limit(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(self->size_limit);
}

static PyObject *
Builder_get_appended_size(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(self->used);
}

static PyObject *
Builder_get_appended_limit(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(self->limit);
}

static PyObject *
Builder_get_memory_cap(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(self->memory_cap);
}

static int
Builder_set_memory_cap(Builder *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value == NULL || !PyLong_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "memory_cap must be an int");
        return -1;
    }
    Py_ssize_t cap = PyLong_AsSsize_t(value);
    if (cap == -1 && PyErr_Occurred())
        return -1;
    if (cap < 0) {
        PyErr_Format(PyExc_ValueError, "memory_cap %zd must not be negative", cap);
        return -1;
    }
    self->memory_cap = cap;
    return 0;
}

static PyObject *
Builder_get_producer_id(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromLongLong(self->producer_id);
}

static PyObject *
Builder_get_producer_epoch(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromLong(self->producer_epoch);
}

static PyObject *
Builder_get_base_sequence(Builder *self, void *Py_UNUSED(c))
{
    return PyLong_FromLong(self->base_sequence);
}

static PyMethodDef Builder_methods[] = {
    {"append", (PyCFunction)(void (*)(void))Builder_append, METH_FASTCALL | METH_KEYWORDS,
     "Add a record; its offset delta, or None when it does not fit or the batch is closed."},
    {"append_many", (PyCFunction)(void (*)(void))Builder_append_many,
     METH_VARARGS | METH_KEYWORDS, "Add records of parallel sequences; how many were added."},
    {"open_state", (PyCFunction)Builder_open_state, METH_NOARGS,
     "(room, next offset delta, base timestamp), or None when closed or empty."},
    {"append_encoded", (PyCFunction)Builder_append_encoded, METH_VARARGS,
     "Add records the caller encoded."},
    {"close_for_appends", (PyCFunction)Builder_close_for_appends, METH_NOARGS,
     "Refuse further appends."},
    {"seal", (PyCFunction)Builder_seal, METH_NOARGS, "Close for appends and compress."},
    {"set_producer_state", (PyCFunction)(void (*)(void))Builder_set_producer_state,
     METH_VARARGS | METH_KEYWORDS,
     "Set producer id, epoch and base sequence."},
    {"build", (PyCFunction)Builder_build_buffer, METH_NOARGS, "The batch's wire bytes."},
    {"build_buffer", (PyCFunction)Builder_build_buffer, METH_NOARGS,
     "The batch's wire bytes (never changed once returned)."},
    {"records_room", (PyCFunction)Builder_records_room, METH_VARARGS | METH_STATIC,
     "Bytes of encoded records an empty builder with these settings takes."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Builder_getset[] = {
    {"is_closed", (getter)Builder_get_is_closed, NULL, NULL, NULL},
    {"is_sealed", (getter)Builder_get_is_sealed, NULL, NULL, NULL},
    {"is_full", (getter)Builder_get_is_full, NULL, NULL, NULL},
    {"estimated_size_in_bytes", (getter)Builder_get_estimated_size, NULL, NULL, NULL},
    {"uncompressed_records_size", (getter)Builder_get_uncompressed_size, NULL, NULL, NULL},
    {"compression", (getter)Builder_get_compression, NULL, NULL, NULL},
    {"size_limit", (getter)Builder_get_size_limit, NULL, NULL, NULL},
    {"appended_size", (getter)Builder_get_appended_size, NULL, NULL, NULL},
    {"appended_limit", (getter)Builder_get_appended_limit, NULL, NULL, NULL},
    {"memory_cap", (getter)Builder_get_memory_cap, (setter)Builder_set_memory_cap, NULL, NULL},
    {"producer_id", (getter)Builder_get_producer_id, NULL, NULL, NULL},
    {"producer_epoch", (getter)Builder_get_producer_epoch, NULL, NULL, NULL},
    {"base_sequence", (getter)Builder_get_base_sequence, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Builder_as_sequence = {
    .sq_length = (lenfunc)Builder_len,
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.RecordBatchBuilder",
    .tp_doc = "A record batch v2 builder whose records are encoded into one buffer as they "
              "are appended (kafkaline.record.builder.RecordBatchBuilder is the reference).",
    .tp_basicsize = sizeof(Builder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Builder_init,
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_traverse = (traverseproc)Builder_traverse,
    .tp_clear = (inquiry)Builder_clear,
    .tp_methods = Builder_methods,
    .tp_getset = Builder_getset,
    .tp_as_sequence = &Builder_as_sequence,
};

/* buffer_capacity(builder): the bytes its buffer has room for, to check in tests that
 * a batch's buffer is sized once rather than grown record by record. */
static PyObject *
core_buffer_capacity(PyObject *Py_UNUSED(module), PyObject *builder)
{
    if (!Py_IS_TYPE(builder, &BuilderType)) {
        PyErr_Format(PyExc_TypeError, "buffer_capacity() takes a RecordBatchBuilder, not %s",
                     Py_TYPE(builder)->tp_name);
        return NULL;
    }
    return PyLong_FromSsize_t(((Builder *)builder)->capacity);
}

/* ------------------------------------------------------------------------------ QueueLock */

/* A partition queue's lock: threading.Lock's interface (acquire, release, locked, `with`), so
 * the accumulator's Python takes it as any lock, and OpenBatchSender takes it in C without
 * calling Python. Every use holds the GIL, so the lock's state is a flag the GIL guards: taking
 * a free lock and releasing one without waiters costs a few instructions. A thread that finds
 * it held waits with the GIL released on `wake`, a PyThread lock used as a semaphore of at
 * most one (posted: released once for the waiters and not yet taken by one), and checks the
 * flag again when woken. Like threading.Lock it is not owned by a thread, and a copy in a
 * child made by os.fork() keeps the state it had at the fork. */
#ifdef Py_GIL_DISABLED
#error "QueueLock relies on the GIL"
#endif
typedef struct {
    PyObject_HEAD
    PyThread_type_lock wake; /* held unless posted */
    Py_ssize_t waiters;
    char locked;
    char posted;
} QueueLock;

static PyObject *
QueueLock_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "QueueLock() takes no arguments");
        return NULL;
    }
    QueueLock *self = (QueueLock *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->wake = PyThread_allocate_lock();
    if (self->wake == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    PyThread_acquire_lock(self->wake, NOWAIT_LOCK);
    return (PyObject *)self;
}

static void
QueueLock_dealloc(QueueLock *self)
{
    if (self->wake != NULL) {
        if (!self->posted)
            PyThread_release_lock(self->wake);
        PyThread_free_lock(self->wake);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline double
monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Takes the lock, waiting up to timeout seconds (< 0: forever) with the GIL released and
 * running signal handlers when a signal interrupts the wait, as threading.Lock does:
 * 1 taken, 0 timed out, -1 with an exception set (a signal handler raised). */
static int
queue_lock_wait(QueueLock *self, double timeout)
{
    if (timeout == 0)
        return 0;
    double deadline = timeout > 0 ? monotonic_seconds() + timeout : 0;
    int rc = 0;
    self->waiters++;
    for (;;) {
        PY_TIMEOUT_T wait = -1;
        if (timeout > 0) {
            double left = deadline - monotonic_seconds();
            if (left <= 0)
                break;
            wait = (PY_TIMEOUT_T)(left * 1e6);
        }
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->wake, wait, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED) {
            self->posted = 0;
            if (!self->locked) {
                self->locked = 1;
                rc = 1;
                break;
            }
        }
        else if (r == PY_LOCK_FAILURE)
            break;
        else if (Py_MakePendingCalls() < 0) {
            rc = -1;
            break;
        }
    }
    self->waiters--;
    return rc;
}

static inline int
queue_lock_take(QueueLock *self, double timeout)
{
    if (!self->locked) {
        self->locked = 1;
        return 1;
    }
    return queue_lock_wait(self, timeout);
}

/* Releases a held lock, waking a waiter if any. */
static inline void
queue_lock_give(QueueLock *self)
{
    self->locked = 0;
    if (self->waiters > 0 && !self->posted) {
        self->posted = 1;
        PyThread_release_lock(self->wake);
    }
}

static PyObject *
QueueLock_acquire(QueueLock *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd:acquire", kwlist, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    int rc = queue_lock_take(self, blocking ? timeout : 0);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *
QueueLock_enter(QueueLock *self, PyObject *Py_UNUSED(ignored))
{
    int rc = queue_lock_take(self, -1);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *
QueueLock_release(QueueLock *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    queue_lock_give(self);
    Py_RETURN_NONE;
}

static PyObject *
QueueLock_exit(QueueLock *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    return QueueLock_release(self, NULL);
}

static PyObject *
QueueLock_locked(QueueLock *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->locked);
}

static PyObject *
QueueLock_repr(QueueLock *self)
{
    return PyUnicode_FromFormat("<%s QueueLock object at %p>",
                                self->locked ? "locked" : "unlocked", self);
}

static PyMethodDef QueueLock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))QueueLock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1): take the lock, as threading.Lock.acquire()."},
    {"release", (PyCFunction)QueueLock_release, METH_NOARGS, "Release the lock."},
    {"locked", (PyCFunction)QueueLock_locked, METH_NOARGS, "Whether the lock is held."},
    {"__enter__", (PyCFunction)QueueLock_enter, METH_NOARGS, "Take the lock."},
    {"__exit__", (PyCFunction)(void (*)(void))QueueLock_exit, METH_FASTCALL,
     "Release the lock."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject QueueLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.QueueLock",
    .tp_doc = "A partition queue's lock, threading.Lock's interface; the compiled send() takes "
              "it without calling Python.",
    .tp_basicsize = sizeof(QueueLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = QueueLock_new,
    .tp_dealloc = (destructor)QueueLock_dealloc,
    .tp_repr = (reprfunc)QueueLock_repr,
    .tp_methods = QueueLock_methods,
};

/* ---------------------------------------------------------------- RecordFuture */

/* The per-record handle send() returns: the batch's ProduceRequestResult and the record's
 * offset delta, serialized key and value sizes and timestamp, kept as C ints (an int object
 * is made only when Python reads one). kafkaline.producer.futures.FutureRecordMetadata
 * subclasses it with the future's methods and no slots of its own, and registers itself
 * (register_future_type), so that its instances skip subtype_dealloc and come from, and go
 * back to, a free list: a discarded future is the common case. Compared by identity (the
 * default), as the pure build's FutureRecordMetadata is. */
typedef struct {
    PyObject_HEAD
    PyObject *batch_result;
    long long offset_delta;
    long long key_size;
    long long value_size;
    long long timestamp;
    /* NULL, or when constructed from Python with a field that is not an int of 64 bits
     * (a timestamp out of range fails its batch later, not here): the four fields as given. */
    PyObject *given;
} RecordFuture;

static PyTypeObject RecordFutureType;
static void RecordFuture_dealloc(RecordFuture *self);

/* Freed futures kept for reuse: the memory of objects of RecordFutureType or a registered
 * subtype (all the same size), untracked, with no references held. */
#define FUTURE_FREE_MAX 256
static PyObject *future_free[FUTURE_FREE_MAX];
static int future_free_count;

/* A new future of `type`, RecordFutureType or a subtype, tracked by the GC; batch_result
 * gets a new reference. The free list serves only the types whose dealloc fills it (the
 * base and registered subtypes): a further subclass may need other memory (a managed
 * __dict__ lives before the object). */
static PyObject *
future_make(PyTypeObject *type, PyObject *batch_result, long long offset_delta,
            long long key_size, long long value_size, long long timestamp)
{
    RecordFuture *f;
    int reused = future_free_count > 0 && type->tp_dealloc == (destructor)RecordFuture_dealloc;
    if (reused) {
        f = (RecordFuture *)future_free[--future_free_count];
        PyObject_Init((PyObject *)f, type); /* a reference to a heap type, as tp_alloc */
    }
    else if ((f = (RecordFuture *)type->tp_alloc(type, 0)) == NULL) {
        return NULL;
    }
    f->batch_result = Py_NewRef(batch_result);
    f->offset_delta = offset_delta;
    f->key_size = key_size;
    f->value_size = value_size;
    f->timestamp = timestamp;
    f->given = NULL;
    if (reused)
        PyObject_GC_Track(f); /* tp_alloc tracks */
    return (PyObject *)f;
}

static PyObject *
RecordFuture_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"batch_result",          "offset_delta", "serialized_key_size",
                             "serialized_value_size", "timestamp",    NULL};
    PyObject *batch_result, *given[4];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOO:FutureRecordMetadata", kwlist,
                                     &batch_result, &given[0], &given[1], &given[2], &given[3]))
        return NULL;
    long long ints[4] = {0, 0, 0, 0};
    int plain = 1;
    for (int i = 0; i < 4 && plain; i++) {
        int overflow = 0;
        if (PyLong_CheckExact(given[i]))
            ints[i] = PyLong_AsLongLongAndOverflow(given[i], &overflow);
        plain = PyLong_CheckExact(given[i]) && !overflow;
    }
    RecordFuture *f = (RecordFuture *)future_make(type, batch_result, ints[0], ints[1],
                                                  ints[2], ints[3]);
    if (f != NULL && !plain &&
        (f->given = PyTuple_Pack(4, given[0], given[1], given[2], given[3])) == NULL)
        Py_CLEAR(f);
    return (PyObject *)f;
}

static int
RecordFuture_traverse(RecordFuture *self, visitproc visit, void *arg)
{
    /* A subtype's own reference to its type is visited by subtype_traverse. */
    Py_VISIT(self->batch_result);
    Py_VISIT(self->given);
    return 0;
}

static int
RecordFuture_clear(RecordFuture *self)
{
    Py_CLEAR(self->batch_result);
    Py_CLEAR(self->given);
    return 0;
}

/* The dealloc of RecordFutureType and of a registered subtype (in place of subtype_dealloc:
 * such a subtype adds no slots, __dict__, __weakref__ or finalizer, see
 * register_future_type). Also reached through subtype_dealloc from other subclasses, which
 * drops the instance's reference to its type itself when the nearest base with this dealloc
 * is RecordFutureType (a static type), and leaves it to this dealloc when that base is a
 * registered (heap) subtype. */
static void
RecordFuture_dealloc(RecordFuture *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyTypeObject *own = type;
    while (own->tp_dealloc != (destructor)RecordFuture_dealloc)
        own = own->tp_base;
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->batch_result);
    Py_CLEAR(self->given);
    if (future_free_count < FUTURE_FREE_MAX && type->tp_dealloc == (destructor)RecordFuture_dealloc)
        future_free[future_free_count++] = (PyObject *)self;
    else
        type->tp_free((PyObject *)self);
    if (own->tp_flags & Py_TPFLAGS_HEAPTYPE)
        Py_DECREF(type);
}

/* Field i (0: offset_delta, 1: key size, 2: value size, 3: timestamp) as Python sees it. */
static PyObject *
future_field(RecordFuture *self, int i)
{
    if (self->given != NULL)
        return Py_NewRef(PyTuple_GET_ITEM(self->given, i));
    long long value = i == 0   ? self->offset_delta
                      : i == 1 ? self->key_size
                      : i == 2 ? self->value_size
                               : self->timestamp;
    return PyLong_FromLongLong(value);
}

static PyObject *
RecordFuture_get_field(RecordFuture *self, void *closure)
{
    return future_field(self, (int)(intptr_t)closure);
}

static PyObject *
RecordFuture_get_batch_result(RecordFuture *self, void *Py_UNUSED(closure))
{
    if (self->batch_result == NULL) { /* cleared by the GC, breaking a cycle */
        PyErr_SetString(PyExc_AttributeError, "batch_result");
        return NULL;
    }
    return Py_NewRef(self->batch_result);
}

static PyObject *
RecordFuture_reduce(RecordFuture *self, PyObject *Py_UNUSED(ignored))
{
    /* As the pure build's NamedTuple: copy.copy() gives a new handle on the same result;
     * pickling fails on the result (its lock), as there. */
    PyObject *fields[4] = {NULL, NULL, NULL, NULL};
    PyObject *reduced = NULL;
    for (int i = 0; i < 4; i++)
        if ((fields[i] = future_field(self, i)) == NULL)
            goto done;
    reduced = Py_BuildValue("O(OOOOO)", Py_TYPE(self),
                            self->batch_result ? self->batch_result : Py_None, fields[0],
                            fields[1], fields[2], fields[3]);
done:
    for (int i = 0; i < 4; i++)
        Py_XDECREF(fields[i]);
    return reduced;
}

static PyMethodDef RecordFuture_methods[] = {
    {"__reduce__", (PyCFunction)RecordFuture_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef RecordFuture_getset[] = {
    {"batch_result", (getter)RecordFuture_get_batch_result, NULL,
     "The ProduceRequestResult of the batch the record was appended to.", NULL},
    {"offset_delta", (getter)RecordFuture_get_field, NULL,
     "The record's offset delta in that batch.", (void *)0},
    {"serialized_key_size", (getter)RecordFuture_get_field, NULL,
     "The key's size in bytes, -1 without key.", (void *)1},
    {"serialized_value_size", (getter)RecordFuture_get_field, NULL,
     "The value's size in bytes, -1 without value.", (void *)2},
    {"timestamp", (getter)RecordFuture_get_field, NULL,
     "The record's timestamp (ms since the epoch).", (void *)3},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RecordFutureType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.RecordFuture",
    .tp_doc = "The fields of a record's future; see kafkaline.producer.FutureRecordMetadata.",
    .tp_basicsize = sizeof(RecordFuture),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = RecordFuture_new,
    .tp_dealloc = (destructor)RecordFuture_dealloc,
    .tp_traverse = (traverseproc)RecordFuture_traverse,
    .tp_clear = (inquiry)RecordFuture_clear,
    .tp_methods = RecordFuture_methods,
    .tp_getset = RecordFuture_getset,
};

/* register_future_type(cls): cls, a direct Python subclass of RecordFuture adding only
 * methods (`__slots__ = ()`), gets RecordFuture's dealloc instead of subtype_dealloc (which
 * would look for the slots, dict, weakrefs and finalizer it does not have). */
static PyObject *
core_register_future_type(PyObject *Py_UNUSED(module), PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "register_future_type() takes a class, not %.200s",
                     Py_TYPE(cls)->tp_name);
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    if (type->tp_base != &RecordFutureType || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        type->tp_basicsize != sizeof(RecordFuture) || type->tp_itemsize != 0 ||
        type->tp_dictoffset != 0 || type->tp_weaklistoffset != 0 || type->tp_finalize != NULL ||
        type->tp_del != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "register_future_type() takes a direct subclass of RecordFuture with "
                     "__slots__ = () and no finalizer, not %.200s",
                     type->tp_name);
        return NULL;
    }
    type->tp_dealloc = (destructor)RecordFuture_dealloc;
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- OpenBatchSender */

/* Producer.send()'s common case in one call: sender(topic, value, key, headers, partition,
 * timestamp_ms) puts a record into its partition's open batch and returns its future, or
 * returns None with nothing done, and send() then takes its general path, which decides the
 * same way for every record this one takes and raises the named errors for bad ones. So
 * anything unusual is None here, never an error: a value or key that is not bytes or None,
 * headers, a topic not yet in the partition counts, a partition or timestamp that is not a
 * valid int, a record over the payload limit, no open batch with room, a sticky partition
 * due to switch, a producer that is not open.
 *
 * The partition is what the general path chooses: the one given, murmur2 of the key (as
 * Java), or the topic's current sticky partition (KIP-794) for a record without key. The
 * accumulator's state is read where it keeps it (its copy-on-write map of queues, each
 * queue's lock and batches, the sticky partitioners), under the same lock the general path
 * takes, so the order of records within a partition is the order of the appends.
 *
 * The producer makes one only when nothing else must see each record (no interceptors,
 * serializers, custom partitioner or transactions), sets `open` while its gate is open, and
 * `partition_counts` to its map of topic -> partition count whenever it replaces that map. */
/* Where a type keeps an attribute declared in __slots__ (its member descriptor's offset), so
 * that reading it is a load instead of a lookup through the type; offset -1 when the
 * attribute is something else and is read the general way. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset;
} SlotCache;

typedef struct {
    PyObject_HEAD
    PyObject *accumulator;
    PyTypeObject *future_type;
    PyObject *partition_counts; /* dict, the producer's own */
    Py_ssize_t payload_limit;   /* key + value bytes above which the general path checks */
    Py_ssize_t record_overhead; /* a record's size bound without key, value, headers */
    int open;
    vectorcallfunc vectorcall; /* called without an argument tuple to build and parse */
    /* The lock type's acquire and release, looked up on the first lock seen. */
    PyTypeObject *lock_type;
    PyObject *lock_acquire;
    PyObject *lock_release;
    SlotCache queue_lock, queue_batches, batch_builder, batch_result;
    SlotCache sticky_current, sticky_size, sticky_partition, sticky_produced;
    PyObject *fallback; /* the general send(), or NULL */
    PyObject *accumulator_dict; /* its instance dict, once read */
    /* The queues of cache_topic by partition, found in the map cache_queues, see
     * cached_queue(). */
    PyObject *cache_queues, *cache_topic, **cache_queue;
    Py_ssize_t cache_size;
} Sender;

static PyObject *Sender_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames);
static int Sender_set_fallback(Sender *self, PyObject *value, void *Py_UNUSED(c));
static void queue_cache_clear(Sender *self);

static PyObject *str_queues, *str_lock, *str_batches, *str_builder, *str_result, *str_sticky;
static PyObject *str_current, *str_partition, *str_produced_bytes, *str_sticky_batch_size;

static int
Sender_init(Sender *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"accumulator", "future_type", "payload_limit", "record_overhead",
                             "fallback", NULL};
    PyObject *accumulator, *future_type, *fallback = Py_None;
    Py_ssize_t payload_limit, record_overhead;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!nn|O:OpenBatchSender", kwlist, &accumulator,
                                     &PyType_Type, &future_type, &payload_limit,
                                     &record_overhead, &fallback))
        return -1;
    if (Sender_set_fallback(self, fallback, NULL) < 0)
        return -1;
    if (!PyType_IsSubtype((PyTypeObject *)future_type, &RecordFutureType)) {
        PyErr_Format(PyExc_TypeError, "future_type must be a subclass of RecordFuture, not %.200s",
                     ((PyTypeObject *)future_type)->tp_name);
        return -1;
    }
    PyObject *counts = PyDict_New();
    if (counts == NULL)
        return -1;
    Py_XSETREF(self->accumulator, Py_NewRef(accumulator));
    Py_XSETREF(self->future_type, (PyTypeObject *)Py_NewRef(future_type));
    Py_XSETREF(self->partition_counts, counts);
    self->payload_limit = payload_limit;
    self->record_overhead = record_overhead;
    self->open = 0;
    self->vectorcall = Sender_vectorcall;
    return 0;
}

static int
Sender_traverse(Sender *self, visitproc visit, void *arg)
{
    Py_VISIT(self->accumulator);
    Py_VISIT(self->future_type);
    Py_VISIT(self->partition_counts);
    Py_VISIT(self->lock_type);
    Py_VISIT(self->lock_acquire);
    Py_VISIT(self->lock_release);
    Py_VISIT(self->fallback);
    Py_VISIT(self->accumulator_dict);
    Py_VISIT(self->cache_queues);
    Py_VISIT(self->cache_topic);
    for (Py_ssize_t i = 0; i < self->cache_size; i++)
        Py_VISIT(self->cache_queue[i]);
    Py_VISIT(self->queue_lock.type);
    Py_VISIT(self->queue_batches.type);
    Py_VISIT(self->batch_builder.type);
    Py_VISIT(self->batch_result.type);
    Py_VISIT(self->sticky_current.type);
    Py_VISIT(self->sticky_size.type);
    Py_VISIT(self->sticky_partition.type);
    Py_VISIT(self->sticky_produced.type);
    return 0;
}

static int
Sender_clear(Sender *self)
{
    Py_CLEAR(self->queue_lock.type);
    Py_CLEAR(self->queue_batches.type);
    Py_CLEAR(self->batch_builder.type);
    Py_CLEAR(self->batch_result.type);
    Py_CLEAR(self->sticky_current.type);
    Py_CLEAR(self->sticky_size.type);
    Py_CLEAR(self->sticky_partition.type);
    Py_CLEAR(self->sticky_produced.type);
    Py_CLEAR(self->accumulator);
    Py_CLEAR(self->future_type);
    Py_CLEAR(self->partition_counts);
    Py_CLEAR(self->lock_type);
    Py_CLEAR(self->lock_acquire);
    Py_CLEAR(self->lock_release);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->accumulator_dict);
    queue_cache_clear(self);
    return 0;
}

static void
Sender_dealloc(Sender *self)
{
    PyObject_GC_UnTrack(self);
    Sender_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Sender_get_open(Sender *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->open);
}

static int
Sender_set_open(Sender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "open cannot be deleted");
        return -1;
    }
    int truth = PyObject_IsTrue(value);
    if (truth < 0)
        return -1;
    self->open = truth;
    return 0;
}

static PyObject *
Sender_get_counts(Sender *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->partition_counts);
}

static int
Sender_set_counts(Sender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value == NULL || !PyDict_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "partition_counts must be a dict");
        return -1;
    }
    Py_SETREF(self->partition_counts, Py_NewRef(value));
    return 0;
}

/* The lock's acquire or release method called on it: 0, or -1 with an exception set.
 * acquire() blocks with the GIL released, as in the general path's lock.acquire(). */
static int
call_lock(Sender *self, PyObject *lock, int acquire)
{
    if (Py_IS_TYPE(lock, &QueueLockType)) {
        QueueLock *q = (QueueLock *)lock;
        if (acquire)
            return queue_lock_take(q, -1) < 0 ? -1 : 0;
        queue_lock_give(q); /* taken above by this call, so held */
        return 0;
    }
    if (Py_TYPE(lock) != self->lock_type) {
        PyObject *type = (PyObject *)Py_TYPE(lock);
        PyObject *a = PyObject_GetAttrString(type, "acquire");
        PyObject *r = a ? PyObject_GetAttrString(type, "release") : NULL;
        if (r == NULL) {
            Py_XDECREF(a);
            return -1;
        }
        Py_XSETREF(self->lock_acquire, a);
        Py_XSETREF(self->lock_release, r);
        Py_XSETREF(self->lock_type, (PyTypeObject *)Py_NewRef(type));
    }
    PyObject *done = PyObject_Vectorcall(acquire ? self->lock_acquire : self->lock_release,
                                         &lock, 1, NULL);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
}

/* obj.name (a new reference, or NULL with an exception set), through the cache when it is
 * a __slots__ member of obj's type. The type's member descriptor is found as
 * type(obj).name, which is also what obj.name finds first (a data descriptor). */
static PyObject *
read_slot(PyObject *obj, PyObject *name, SlotCache *cache)
{
    PyTypeObject *type = Py_TYPE(obj);
    if (type != cache->type) {
        Py_ssize_t offset = -1;
        PyObject *descr = PyObject_GetAttr((PyObject *)type, name);
        if (descr == NULL) {
            PyErr_Clear(); /* obj.name below says what is wrong */
        }
        else {
            if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
                PyMemberDescrObject *member = (PyMemberDescrObject *)descr;
                if (member->d_member->type == T_OBJECT_EX &&
                    PyType_IsSubtype(type, member->d_common.d_type))
                    offset = member->d_member->offset;
            }
            Py_DECREF(descr);
        }
        Py_XSETREF(cache->type, (PyTypeObject *)Py_NewRef(type));
        cache->offset = offset;
    }
    if (cache->offset >= 0) {
        PyObject *value = *(PyObject **)((char *)obj + cache->offset);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(obj, name); /* also the AttributeError of an unset slot */
}

/* obj.name as a C integer: 0, 1 when it is not an int that fits (nothing set), -1 on error. */
static int
attr_ssize(PyObject *obj, PyObject *name, SlotCache *cache, Py_ssize_t *out)
{
    PyObject *v = read_slot(obj, name, cache);
    if (v == NULL)
        return -1;
    int rc = 1;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (n == -1 && PyErr_Occurred())
            rc = -1;
        else if (!overflow && n >= 0 && n <= PY_SSIZE_T_MAX) {
            *out = (Py_ssize_t)n;
            rc = 0;
        }
    }
    Py_DECREF(v);
    return rc;
}

/* accumulator.name (a new reference, or NULL with an exception set), read from its instance
 * dict: its own attributes are plain ones, and one dict lookup is cheaper than getattr. */
static PyObject *
accumulator_attr(Sender *self, PyObject *name)
{
    if (self->accumulator_dict == NULL) {
        PyObject *d = PyObject_GenericGetDict(self->accumulator, NULL);
        if (d == NULL || !PyDict_CheckExact(d)) {
            Py_XDECREF(d);
            PyErr_Clear();
            return PyObject_GetAttr(self->accumulator, name);
        }
        self->accumulator_dict = d;
    }
    PyObject *value = PyDict_GetItemWithError(self->accumulator_dict, name);
    if (value != NULL)
        return Py_NewRef(value);
    if (PyErr_Occurred())
        return NULL;
    return PyObject_GetAttr(self->accumulator, name);
}

static void
queue_cache_clear(Sender *self)
{
    for (Py_ssize_t i = 0; i < self->cache_size; i++)
        Py_CLEAR(self->cache_queue[i]);
    PyMem_Free(self->cache_queue);
    self->cache_queue = NULL;
    self->cache_size = 0;
    Py_CLEAR(self->cache_queues);
    Py_CLEAR(self->cache_topic);
}

/* queues[topic][partition] (a new reference; NULL, maybe with an exception set, when there
 * is none). The accumulator replaces its map of queues (copy-on-write) whenever a queue is
 * added, never changes one, so the queues found stay valid for the same map, remembered per
 * partition for the last topic. */
static PyObject *
cached_queue(Sender *self, PyObject *queues, PyObject *topic, long long partition,
             long long count)
{
    if (queues != self->cache_queues || topic != self->cache_topic ||
        partition >= self->cache_size) {
        queue_cache_clear(self);
        Py_ssize_t size = count > 64 ? (Py_ssize_t)count : 64;
        if (partition < size && (self->cache_queue = PyMem_Calloc((size_t)size,
                                                                  sizeof(PyObject *))) != NULL) {
            self->cache_size = size;
            self->cache_queues = Py_NewRef(queues);
            self->cache_topic = Py_NewRef(topic);
        }
    }
    if (partition < self->cache_size && self->cache_queue[partition] != NULL)
        return Py_NewRef(self->cache_queue[partition]);
    PyObject *by_partition = PyDict_Check(queues) ? PyDict_GetItemWithError(queues, topic) : NULL;
    if (by_partition == NULL || !PyDict_Check(by_partition))
        return NULL;
    PyObject *number = PyLong_FromLongLong(partition);
    if (number == NULL)
        return NULL;
    PyObject *queue = PyDict_GetItemWithError(by_partition, number);
    Py_DECREF(number);
    if (queue == NULL)
        return NULL;
    if (partition < self->cache_size)
        self->cache_queue[partition] = Py_NewRef(queue);
    return Py_NewRef(queue);
}

/* A non-negative int up to hi, exactly int (not bool, not a subclass): 0 and *out, else 1. */
static int
plain_int(PyObject *obj, long long hi, long long *out)
{
    if (!PyLong_CheckExact(obj))
        return 1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    if (overflow || v < 0 || v > hi)
        return 1;
    *out = v;
    return 0;
}

/* The record into its partition's open batch: its future, or None with nothing done. */
static PyObject *
sender_try(Sender *self, PyObject *const *args)
{
    PyObject *topic = args[0], *value = args[1], *key = args[2];
    if (!self->open || args[3] != Py_None || !PyUnicode_CheckExact(topic) ||
        !(value == Py_None || PyBytes_CheckExact(value)) ||
        !(key == Py_None || PyBytes_CheckExact(key)))
        Py_RETURN_NONE;
    Py_ssize_t key_size = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
    Py_ssize_t value_size = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
    if ((key_size < 0 ? 0 : key_size) + (value_size < 0 ? 0 : value_size) > self->payload_limit)
        Py_RETURN_NONE;

    long long timestamp;
    if (args[5] == Py_None) {
#ifdef CLOCK_REALTIME
        /* time.time_ns() // 1_000_000 reads this clock too */
        struct timespec now;
        if (clock_gettime(CLOCK_REALTIME, &now) != 0 || now.tv_sec < 0)
            Py_RETURN_NONE;
        timestamp = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
#else
        Py_RETURN_NONE;
#endif
    }
    else if (plain_int(args[5], INT64_MAX, &timestamp))
        Py_RETURN_NONE;

    PyObject *count_obj = PyDict_GetItemWithError(self->partition_counts, topic);
    long long count;
    if (count_obj == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (plain_int(count_obj, PY_SSIZE_T_MAX, &count) || count == 0)
        Py_RETURN_NONE;

    /* The partition, or for a keyless record the sticky partitioner (chosen under the lock). */
    long long partition = -1;
    if (args[4] != Py_None) {
        if (plain_int(args[4], count - 1, &partition))
            Py_RETURN_NONE;
    }
    else if (key != Py_None) {
        uint32_t h = (uint32_t)murmur2((const unsigned char *)PyBytes_AS_STRING(key), key_size);
        partition = (long long)((h & 0x7fffffffu) % (uint64_t)count);
    }

    PyObject *result = NULL, *partitioner = NULL, *sticky = NULL, *queue = NULL;
    PyObject *lock = NULL, *batches = NULL, *batch_result = NULL;
    long long offset_delta = -1;
    Py_ssize_t sticky_limit = 0, record_size = 0;
    if (partition < 0) {
        PyObject *by_topic = accumulator_attr(self, str_sticky);
        if (by_topic == NULL)
            return NULL;
        partitioner = PyDict_Check(by_topic) ? PyDict_GetItemWithError(by_topic, topic) : NULL;
        Py_XINCREF(partitioner);
        Py_DECREF(by_topic);
        if (partitioner == NULL)
            goto none_or_error;
        sticky = read_slot(partitioner, str_current, &self->sticky_current);
        if (sticky == NULL)
            goto done;
        if (sticky == Py_None)
            goto none;
        Py_ssize_t p;
        int rc = attr_ssize(sticky, str_partition, &self->sticky_partition, &p);
        if (rc < 0)
            goto done;
        if (rc > 0 || p >= count)
            goto none;
        partition = p;
        if ((rc = attr_ssize(partitioner, str_sticky_batch_size, &self->sticky_size,
                             &sticky_limit)) < 0)
            goto done;
        if (rc > 0 || sticky_limit > PY_SSIZE_T_MAX / 2)
            goto none;
        record_size = self->record_overhead + (value_size < 0 ? 0 : value_size);
    }

    PyObject *queues = accumulator_attr(self, str_queues);
    if (queues == NULL)
        goto done;
    queue = cached_queue(self, queues, topic, partition, count);
    Py_DECREF(queues);
    if (queue == NULL)
        goto none_or_error;
    if ((lock = read_slot(queue, str_lock, &self->queue_lock)) == NULL)
        goto done;
    if ((batches = read_slot(queue, str_batches, &self->queue_batches)) == NULL)
        goto done;
    if (call_lock(self, lock, 1) < 0)
        goto done;
    /* Under the partition's lock, as the general path appends. Nothing here runs Python code
     * that could let another thread in: the attributes read are plain ones. */
    Py_ssize_t n = PyObject_Length(batches);
    PyObject *batch = n > 0 ? PySequence_GetItem(batches, n - 1) : NULL;
    PyObject *builder = batch ? read_slot(batch, str_builder, &self->batch_builder) : NULL;
    int appended = 0;
    if (builder != NULL && Py_IS_TYPE(builder, &BuilderType) && !((Builder *)builder)->closed) {
        Builder *b = (Builder *)builder;
        PyObject *produced = NULL;
        Py_ssize_t produced_bytes = 0;
        int go = 1;
        if (sticky != NULL) {
            /* BuiltInPartitioner.switch_due(): still current, and this record leaves it
             * under twice the sticky batch size (the batch stays not full, see below). */
            PyObject *current = read_slot(partitioner, str_current, &self->sticky_current);
            int rc = current == NULL ? -1 : current != sticky ? 1
                                          : attr_ssize(sticky, str_produced_bytes,
                                                       &self->sticky_produced,
                                                       &produced_bytes);
            Py_XDECREF(current);
            go = rc == 0 && produced_bytes <= PY_SSIZE_T_MAX - record_size &&
                 produced_bytes + record_size < 2 * sticky_limit;
        }
        /* limit - 1: never leaves the batch full, so no wakeup is due (the append that
         * made this batch woke the Sender for any full one before it); nor past the buffer
         * memory the batch holds (append() takes more from the pool). */
        Py_ssize_t bound = b->memory_cap < b->limit ? b->memory_cap : b->limit - 1;
        if (go && !PyErr_Occurred() &&
            try_append(b, timestamp, key_size < 0 ? NULL : PyBytes_AS_STRING(key), key_size,
                       value_size < 0 ? NULL : PyBytes_AS_STRING(value), value_size, NULL, 0,
                       bound) == APPENDED) {
            appended = 1;
            if (sticky != NULL) {
                /* What update_partition_info() does when no switch is due: count. */
                produced = PyLong_FromSsize_t(produced_bytes + record_size);
                if (produced == NULL || PyObject_SetAttr(sticky, str_produced_bytes, produced) < 0)
                    appended = 0; /* the record is in; the error below fails the call */
                Py_XDECREF(produced);
            }
        }
        if (appended) {
            offset_delta = b->count - 1;
            batch_result = read_slot(batch, str_result, &self->batch_result);
        }
    }
    Py_XDECREF(builder);
    Py_XDECREF(batch);
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    if (call_lock(self, lock, 0) < 0) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        goto done;
    }
    if (exc_type != NULL) {
        PyErr_Restore(exc_type, exc_value, exc_tb);
        goto done;
    }
    if (batch_result == NULL)
        goto none;
    result = future_make(self->future_type, batch_result, offset_delta, key_size, value_size,
                         timestamp);
    goto done;
none_or_error:
    if (PyErr_Occurred())
        goto done;
none:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(batch_result);
    Py_XDECREF(lock);
    Py_XDECREF(batches);
    Py_XDECREF(queue);
    Py_XDECREF(sticky);
    Py_XDECREF(partitioner);
    return result;
}

static PyObject *str_send_args[6];

/* sender(topic, value=None, key=None, headers=None, partition=None, timestamp_ms=None):
 * send()'s signature. What sender_try() declines, and any call it cannot read (a missing
 * topic, an unknown keyword), goes to the fallback with the arguments as given: the general
 * path, which raises the TypeError Python would. Without a fallback, None. */
static PyObject *
Sender_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Sender *self = (Sender *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *a[6] = {NULL, Py_None, Py_None, Py_None, Py_None, Py_None};
    if (nargs > 6)
        goto general;
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    if (kwnames != NULL) {
        Py_ssize_t given = PyTuple_GET_SIZE(kwnames);
        unsigned seen = 0;
        for (Py_ssize_t k = 0; k < given; k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            int j = 0;
            while (j < 6 && name != str_send_args[j])
                j++;
            for (int m = 0; j == 6 && m < 6; m++)
                if (PyUnicode_Compare(name, str_send_args[m]) == 0)
                    j = m;
            if (PyErr_Occurred())
                return NULL;
            if (j == 6 || j < nargs || (seen & (1u << j)))
                goto general;
            seen |= 1u << j;
            a[j] = args[nargs + k];
        }
    }
    if (a[0] == NULL)
        goto general;
    PyObject *future = sender_try(self, a);
    if (future != Py_None)
        return future; /* or NULL */
    Py_DECREF(future);
general:
    if (self->fallback == NULL) {
        if (a[0] == NULL || nargs > 6) {
            PyErr_SetString(PyExc_TypeError, "OpenBatchSender takes topic, value, key, "
                                             "headers, partition, timestamp_ms");
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* Attributes of the fallback (the general send()), so that help(), inspect.signature() and
 * __doc__ describe the producer's send(). */
static PyObject *
Sender_fallback_attr(Sender *self, void *name)
{
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_AttributeError, (const char *)name);
        return NULL;
    }
    return PyObject_GetAttrString(self->fallback, (const char *)name);
}

static PyObject *
Sender_get_fallback(Sender *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->fallback == NULL ? Py_None : self->fallback);
}

static int
Sender_set_fallback(Sender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value != NULL && value != Py_None && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable or None");
        return -1;
    }
    Py_XSETREF(self->fallback, value == Py_None ? NULL : Py_XNewRef(value));
    return 0;
}

static PyGetSetDef Sender_getset[] = {
    {"fallback", (getter)Sender_get_fallback, (setter)Sender_set_fallback,
     "What a call the core declines goes to (send()'s general path), or None.", NULL},
    {"__wrapped__", (getter)Sender_get_fallback, NULL, "The fallback.", NULL},
    {"__doc__", (getter)Sender_fallback_attr, NULL, NULL, "__doc__"},
    {"__name__", (getter)Sender_fallback_attr, NULL, NULL, "__name__"},
    {"__qualname__", (getter)Sender_fallback_attr, NULL, NULL, "__qualname__"},
    {"open", (getter)Sender_get_open, (setter)Sender_set_open,
     "Whether send() may go straight on (the producer's gate is open).", NULL},
    {"partition_counts", (getter)Sender_get_counts, (setter)Sender_set_counts,
     "The producer's topic -> partition count map.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.OpenBatchSender",
    .tp_doc = "sender(topic, value, key, headers, partition, timestamp_ms): Producer.send()'s "
              "common case into the partition's open batch; its future, or None when nothing "
              "was done.",
    .tp_basicsize = sizeof(Sender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Sender, vectorcall),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sender_init,
    .tp_dealloc = (destructor)Sender_dealloc,
    .tp_traverse = (traverseproc)Sender_traverse,
    .tp_clear = (inquiry)Sender_clear,
    .tp_call = PyVectorcall_Call,
    .tp_getset = Sender_getset,
};

/* ---------------------------------------------------------------- BatchResult */

/* One batch's completion, shared by its records' futures: the compiled base of
 * kafkaline.producer.futures.ProduceRequestResult, whose pure-Python base (PythonResultState,
 * in producer/result_state.py) is the reference. No lock: each method reads and writes the
 * state without running Python code in between, so the GIL makes it atomic; callbacks and
 * waiter.release() run after the state is written, as the Python base runs them outside its
 * lock. */
typedef struct {
    PyObject_HEAD
    PyObject *topic, *partition, *base_offset, *log_append_time;
    /* None until set, never NULL (but after a GC clear): the Python side reads them as
     * slots, which the interpreter specializes only for members that are never NULL. */
    PyObject *state;     /* a BatchState; None while pending */
    PyObject *final;     /* True once completed and its callbacks ran (or split) */
    PyObject *completer; /* the thread id running its callbacks */
    PyObject *error, *error_traceback, *record_errors, *redirects;
    PyObject *hooks;   /* list of (offset delta, future, on_success, on_error), or NULL */
    PyObject *waiters; /* list of objects with release(), or NULL */
} BatchResult;

static PyTypeObject BatchResultType;
/* BatchState.SUCCEEDED and SPLIT (see register_result_states()); the ints -1 */
static PyObject *state_succeeded, *state_split, *minus_one;
static PyObject *str_release, *str_run_hook, *str_add_hook, *str_waits_for_itself, *str_value,
    *str_traceback;
static PyObject *str_complete_args[5];

static PyObject *
BatchResult_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"topic", "partition", NULL};
    PyObject *topic, *partition;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 2) {
        topic = PyTuple_GET_ITEM(args, 0);
        partition = PyTuple_GET_ITEM(args, 1);
    }
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:ProduceRequestResult", kwlist, &topic,
                                          &partition))
        return NULL;
    BatchResult *self = (BatchResult *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->topic = Py_NewRef(topic);
    self->partition = Py_NewRef(partition);
    self->base_offset = Py_NewRef(minus_one);
    self->log_append_time = Py_NewRef(minus_one);
    self->state = Py_NewRef(Py_None);
    self->final = Py_NewRef(Py_False);
    self->completer = Py_NewRef(Py_None);
    self->error = Py_NewRef(Py_None);
    self->error_traceback = Py_NewRef(Py_None);
    self->record_errors = Py_NewRef(Py_None);
    self->redirects = Py_NewRef(Py_None);
    return (PyObject *)self;
}

static int
BatchResult_traverse(BatchResult *self, visitproc visit, void *arg)
{
    Py_VISIT(self->topic);
    Py_VISIT(self->partition);
    Py_VISIT(self->base_offset);
    Py_VISIT(self->log_append_time);
    Py_VISIT(self->state);
    Py_VISIT(self->final);
    Py_VISIT(self->completer);
    Py_VISIT(self->error);
    Py_VISIT(self->error_traceback);
    Py_VISIT(self->record_errors);
    Py_VISIT(self->redirects);
    Py_VISIT(self->hooks);
    Py_VISIT(self->waiters);
    if (Py_TYPE(self)->tp_flags & Py_TPFLAGS_HEAPTYPE)
        Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
BatchResult_clear(BatchResult *self)
{
    Py_CLEAR(self->topic);
    Py_CLEAR(self->partition);
    Py_CLEAR(self->base_offset);
    Py_CLEAR(self->log_append_time);
    Py_CLEAR(self->state);
    Py_CLEAR(self->final);
    Py_CLEAR(self->completer);
    Py_CLEAR(self->error);
    Py_CLEAR(self->error_traceback);
    Py_CLEAR(self->record_errors);
    Py_CLEAR(self->redirects);
    Py_CLEAR(self->hooks);
    Py_CLEAR(self->waiters);
    return 0;
}

static void
BatchResult_dealloc(BatchResult *self)
{
    PyObject_GC_UnTrack(self);
    BatchResult_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Call release() on each waiter (the list is the caller's, taken from the result). */
static int
release_waiters(PyObject *waiters)
{
    if (waiters == NULL)
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(waiters); i++) {
        PyObject *done = PyObject_CallMethodNoArgs(PyList_GET_ITEM(waiters, i), str_release);
        if (done == NULL) {
            Py_DECREF(waiters);
            return -1;
        }
        Py_DECREF(done);
    }
    Py_DECREF(waiters);
    return 0;
}

static PyObject *
BatchResult_is_done(BatchResult *self, PyObject *Py_UNUSED(ignored))
{
    if (self->final == Py_True)
        Py_RETURN_TRUE;
    if (self->state == Py_None)
        Py_RETURN_FALSE;
    return PyObject_CallMethodNoArgs((PyObject *)self, str_waits_for_itself);
}

static PyObject *
BatchResult_record_error(BatchResult *self, PyObject *offset_delta)
{
    if (self->record_errors != Py_None) {
        int has = PySequence_Contains(self->record_errors, offset_delta);
        if (has < 0)
            return NULL;
        if (has)
            return PyObject_GetItem(self->record_errors, offset_delta);
    }
    return Py_NewRef(self->error);
}

static PyObject *
BatchResult_redirected(BatchResult *self, PyObject *offset_delta)
{
    if (self->redirects == Py_None)
        Py_RETURN_NONE;
    return PyObject_GetItem(self->redirects, offset_delta);
}

/* A list in *slot for add_waiter() and _keep_hook(). Made before they read the state: making
 * it may run the GC, and so Python code, and so another thread that completes the result. */
static int
ensure_list(PyObject **slot)
{
    if (*slot != NULL)
        return 0;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return -1;
    if (*slot == NULL)
        *slot = list;
    else
        Py_DECREF(list);
    return 0;
}

static PyObject *
BatchResult_add_waiter(BatchResult *self, PyObject *waiter)
{
    if (self->final == Py_False && ensure_list(&self->waiters) < 0)
        return NULL;
    if (self->final == Py_True)
        Py_RETURN_FALSE;
    if (PyList_Append(self->waiters, waiter) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

/* _drop_waiter(waiter): forget a waiter whose wait timed out; False if completion took it. */
static PyObject *
BatchResult_drop_waiter(BatchResult *self, PyObject *waiter)
{
    PyObject *waiters = self->waiters;
    for (Py_ssize_t i = 0; waiters != NULL && i < PyList_GET_SIZE(waiters); i++) {
        if (PyList_GET_ITEM(waiters, i) == waiter) {
            if (PySequence_DelItem(waiters, i) < 0)
                return NULL;
            Py_RETURN_TRUE;
        }
    }
    Py_RETURN_FALSE;
}

/* _keep_hook(offset_delta, future, on_success, on_error): keep it for completion; False,
 * keeping nothing, if the batch completed already. */
static PyObject *
BatchResult_keep_hook(BatchResult *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "_keep_hook() takes offset_delta, future, on_success, on_error");
        return NULL;
    }
    PyObject *hook = PyTuple_Pack(4, args[0], args[1], args[2], args[3]);
    if (hook == NULL)
        return NULL;
    if (self->state == Py_None && ensure_list(&self->hooks) < 0) {
        Py_DECREF(hook);
        return NULL;
    }
    if (self->state != Py_None) {
        Py_DECREF(hook);
        Py_RETURN_FALSE;
    }
    int failed = PyList_Append(self->hooks, hook);
    Py_DECREF(hook);
    if (failed < 0)
        return NULL;
    Py_RETURN_TRUE;
}

/* complete()'s arguments by position or name, into given[] (pre-filled with defaults). */
static int
complete_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **given)
{
    if (nargs > 5) {
        PyErr_Format(PyExc_TypeError, "complete() takes at most 5 arguments (%zd given)", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        given[i] = args[i];
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int j = 0;
        while (j < 5 && name != str_complete_args[j])
            j++;
        for (int m = 0; j == 5 && m < 5; m++)
            if (PyUnicode_Compare(name, str_complete_args[m]) == 0)
                j = m;
        if (j == 5 || j < nargs) {
            PyErr_Format(PyExc_TypeError,
                         j == 5 ? "complete() got an unexpected keyword argument %R"
                                : "complete() got multiple values for argument %R",
                         name);
            return -1;
        }
        given[j] = args[nargs + k];
    }
    if (given[0] == NULL) {
        PyErr_SetString(PyExc_TypeError, "complete() missing its argument 'state'");
        return -1;
    }
    return 0;
}

/* Run the hooks (a list taken from the result) through the Python side's _run_hook(). */
static int
run_hooks(BatchResult *self, PyObject *hooks)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hooks); i++) {
        PyObject *hook = PyList_GET_ITEM(hooks, i);
        PyObject *call[5] = {(PyObject *)self};
        for (int j = 0; j < 4; j++)
            call[j + 1] = PyTuple_GET_ITEM(hook, j);
        PyObject *ran = PyObject_VectorcallMethod(str_run_hook, call, 5, NULL);
        if (ran == NULL)
            return -1;
        Py_DECREF(ran);
    }
    return 0;
}

/* complete(state, base_offset=-1, log_append_time=-1, error=None, record_errors=None). */
static PyObject *
BatchResult_complete(BatchResult *self, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    PyObject *given[5] = {NULL, minus_one, minus_one, Py_None, Py_None};
    if (complete_args(args, nargs, kwnames, given) < 0)
        return NULL;
    PyObject *state = given[0], *error = given[3];
    if (state_split == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "register_result_states() was not called");
        return NULL;
    }
    if (state == state_split) {
        PyErr_SetString(PyExc_ValueError, "a split completes through redirect()");
        return NULL;
    }
    if ((error == Py_None) != (state == state_succeeded)) {
        PyObject *value = PyObject_GetAttr(state, str_value);
        if (value != NULL) {
            PyErr_Format(PyExc_ValueError, "a %S batch needs an error exactly when it failed",
                         value);
            Py_DECREF(value);
        }
        return NULL;
    }
    if (self->state != Py_None)
        return Py_NewRef(self->state);
    if (error != Py_None) {
        PyObject *traceback = PyObject_GetAttr(error, str_traceback);
        if (traceback == NULL)
            return NULL;
        Py_SETREF(self->error_traceback, traceback);
        Py_SETREF(self->error, Py_NewRef(error));
    }
    Py_SETREF(self->base_offset, Py_NewRef(given[1]));
    Py_SETREF(self->log_append_time, Py_NewRef(given[2]));
    Py_SETREF(self->record_errors, Py_NewRef(given[4]));
    Py_SETREF(self->state, Py_NewRef(state));
    PyObject *hooks = self->hooks;
    int failed = 0;
    if (hooks != NULL && PyList_GET_SIZE(hooks) > 0) {
        PyObject *completer = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
        if (completer == NULL)
            return NULL;
        Py_SETREF(self->completer, completer);
        self->hooks = NULL;
        failed = run_hooks(self, hooks);
        Py_DECREF(hooks);
    }
    /* Done only now, after the callbacks: what a callback did is seen by the waiters. */
    Py_SETREF(self->final, Py_NewRef(Py_True));
    PyObject *waiters = self->waiters;
    self->waiters = NULL;
    if (failed) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        int released = release_waiters(waiters);
        PyErr_Restore(type, value, traceback);
        if (released < 0)
            PyErr_WriteUnraisable((PyObject *)self);
        return NULL;
    }
    if (release_waiters(waiters) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Move one hook to its target: straight into a pending compiled result's list (nothing runs
 * in between, so the order is kept), else through the target's add_hook(). */
static int
move_hook(PyObject *redirects, PyObject *hook)
{
    PyObject *where = PyObject_GetItem(redirects, PyTuple_GET_ITEM(hook, 0));
    if (where == NULL)
        return -1;
    PyObject *target, *delta;
    if (!PyTuple_Check(where) || PyTuple_GET_SIZE(where) != 2) {
        PyErr_Format(PyExc_TypeError, "a redirect target must be (result, offset delta), not %R",
                     where);
        Py_DECREF(where);
        return -1;
    }
    target = PyTuple_GET_ITEM(where, 0);
    delta = PyTuple_GET_ITEM(where, 1);
    PyObject *moved = NULL;
    if (PyObject_TypeCheck(target, &BatchResultType) && ((BatchResult *)target)->state == Py_None) {
        BatchResult *pending = (BatchResult *)target;
        PyObject *entry = PyTuple_Pack(4, delta, PyTuple_GET_ITEM(hook, 1),
                                       PyTuple_GET_ITEM(hook, 2), PyTuple_GET_ITEM(hook, 3));
        if (entry != NULL && ensure_list(&pending->hooks) == 0) {
            /* Completed meanwhile (the GC ran Python code): its add_hook() knows what to do. */
            if (pending->state != Py_None)
                moved = PyObject_CallMethodObjArgs(target, str_add_hook, delta,
                                                   PyTuple_GET_ITEM(hook, 1),
                                                   PyTuple_GET_ITEM(hook, 2),
                                                   PyTuple_GET_ITEM(hook, 3), NULL);
            else if (PyList_Append(pending->hooks, entry) == 0)
                moved = Py_NewRef(Py_None);
        }
        Py_XDECREF(entry);
    }
    else {
        PyObject *call[5] = {target, delta, PyTuple_GET_ITEM(hook, 1), PyTuple_GET_ITEM(hook, 2),
                             PyTuple_GET_ITEM(hook, 3)};
        moved = PyObject_VectorcallMethod(str_add_hook, call, 5, NULL);
    }
    Py_DECREF(where);
    if (moved == NULL)
        return -1;
    Py_DECREF(moved);
    return 0;
}

/* redirect(targets): complete as SPLIT, the record at delta i now at targets[i]. */
static PyObject *
BatchResult_redirect(BatchResult *self, PyObject *targets)
{
    if (self->state != Py_None)
        return Py_NewRef(self->state);
    if (state_split == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "register_result_states() was not called");
        return NULL;
    }
    PyObject *redirects = PySequence_Tuple(targets);
    if (redirects == NULL)
        return NULL;
    PyObject *hooks = self->hooks;
    for (Py_ssize_t i = 0; hooks != NULL && i < PyList_GET_SIZE(hooks); i++) {
        if (move_hook(redirects, PyList_GET_ITEM(hooks, i)) < 0) {
            Py_DECREF(redirects);
            return NULL;
        }
    }
    Py_CLEAR(self->hooks);
    Py_SETREF(self->redirects, redirects);
    Py_SETREF(self->state, Py_NewRef(state_split));
    /* No callbacks run here (they moved): the waiters go on to the new results. */
    Py_SETREF(self->final, Py_NewRef(Py_True));
    PyObject *waiters = self->waiters;
    self->waiters = NULL;
    if (release_waiters(waiters) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef BatchResult_methods[] = {
    {"is_done", (PyCFunction)BatchResult_is_done, METH_NOARGS, NULL},
    {"record_error", (PyCFunction)BatchResult_record_error, METH_O, NULL},
    {"redirected", (PyCFunction)BatchResult_redirected, METH_O, NULL},
    {"add_waiter", (PyCFunction)BatchResult_add_waiter, METH_O, NULL},
    {"_drop_waiter", (PyCFunction)BatchResult_drop_waiter, METH_O, NULL},
    {"_keep_hook", (PyCFunction)(void (*)(void))BatchResult_keep_hook, METH_FASTCALL, NULL},
    {"complete", (PyCFunction)(void (*)(void))BatchResult_complete,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"redirect", (PyCFunction)BatchResult_redirect, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

#define RESULT_FIELD(name, field) \
    {name, T_OBJECT_EX, offsetof(BatchResult, field), READONLY, NULL}
static PyMemberDef BatchResult_members[] = {
    RESULT_FIELD("topic", topic),
    RESULT_FIELD("partition", partition),
    RESULT_FIELD("base_offset", base_offset),
    RESULT_FIELD("log_append_time", log_append_time),
    RESULT_FIELD("state", state),
    RESULT_FIELD("error", error),
    RESULT_FIELD("_state", state),
    RESULT_FIELD("_error", error),
    RESULT_FIELD("_error_traceback", error_traceback),
    RESULT_FIELD("_record_errors", record_errors),
    RESULT_FIELD("_redirects", redirects),
    RESULT_FIELD("_completer", completer),
    RESULT_FIELD("_final", final),
    {"_waiters", T_OBJECT, offsetof(BatchResult, waiters), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};
#undef RESULT_FIELD

static PyTypeObject BatchResultType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.BatchResult",
    .tp_doc = "A batch's completion state (the base of ProduceRequestResult).",
    .tp_basicsize = sizeof(BatchResult),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = BatchResult_new,
    .tp_dealloc = (destructor)BatchResult_dealloc,
    .tp_traverse = (traverseproc)BatchResult_traverse,
    .tp_clear = (inquiry)BatchResult_clear,
    .tp_methods = BatchResult_methods,
    .tp_members = BatchResult_members,
};

/* register_result_states(succeeded, split): the BatchState members complete() compares to. */
static PyObject *
core_register_result_states(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "register_result_states() takes succeeded, split");
        return NULL;
    }
    Py_XSETREF(state_succeeded, Py_NewRef(args[0]));
    Py_XSETREF(state_split, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ module */

static PyObject *
core_murmur2(PyObject *Py_UNUSED(module), PyObject *arg)
{
    BytesArg data;
    if (bytes_arg(arg, "data", &data) < 0)
        return NULL;
    int32_t h = murmur2((const unsigned char *)data.data, data.size);
    bytes_arg_release(&data);
    return PyLong_FromLong(h);
}

static PyObject *
core_partition_for_key(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_for_key() takes key, partition_count");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    if (count <= 0) {
        PyErr_Format(PyExc_ValueError, "partition_count %zd must be positive", count);
        return NULL;
    }
    BytesArg data;
    if (bytes_arg(args[0], "key", &data) < 0)
        return NULL;
    int32_t h = murmur2((const unsigned char *)data.data, data.size);
    bytes_arg_release(&data);
    return PyLong_FromSsize_t((Py_ssize_t)((uint32_t)h & 0x7fffffffu) % count);
}

/* ---------------------------------------------------------- send_batch() over Python lists */

/* One record's headers, if usual (None, or a list or tuple of (str, bytes or None) tuples):
 * 1 and *bound the Python check's bound of their encoded size (validation.headers_size_bound,
 * 0 for none), else 0. */
static int
usual_headers(PyObject *headers, Py_ssize_t *bound)
{
    *bound = 0;
    if (headers == Py_None)
        return 1;
    if (!PyList_CheckExact(headers) && !PyTuple_CheckExact(headers))
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(headers);
    PyObject **items = PySequence_Fast_ITEMS(headers);
    Py_ssize_t size = n ? 5 : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = items[i];
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            return 0;
        PyObject *name = PyTuple_GET_ITEM(pair, 0), *value = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(name) || (value != Py_None && !PyBytes_CheckExact(value)))
            return 0;
        Py_ssize_t name_size;
        if (PyUnicode_AsUTF8AndSize(name, &name_size) == NULL) {
            PyErr_Clear(); /* not UTF-8: the Python check names it */
            return 0;
        }
        size += 10 + name_size + (value == Py_None ? 0 : PyBytes_GET_SIZE(value));
    }
    *bound = size;
    return 1;
}

/* Whether send_batch()'s lists are the usual ones, taken whole by the core: values a list,
 * keys and headers None or lists as long, every key and value bytes or None, every record's
 * headers usual (see usual_headers), every record within payload_limit (key, value and
 * headers bound, as the Python checks count them). False says "not mine": the Python checks
 * run and name the bad index. */
static PyObject *
core_lists_accepted(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "lists_accepted() takes values, keys, headers, payload_limit");
        return NULL;
    }
    PyObject *values = args[0], *keys = args[1], *headers = args[2];
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(values))
        Py_RETURN_FALSE;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if ((keys != Py_None && (!PyList_CheckExact(keys) || PyList_GET_SIZE(keys) != n)) ||
        (headers != Py_None && (!PyList_CheckExact(headers) || PyList_GET_SIZE(headers) != n)))
        Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        Py_ssize_t size = 0, header_size = 0;
        if (value != Py_None) {
            if (!PyBytes_CheckExact(value))
                Py_RETURN_FALSE;
            size = PyBytes_GET_SIZE(value);
        }
        PyObject *key = keys == Py_None ? Py_None : PyList_GET_ITEM(keys, i);
        if (key != Py_None) {
            if (!PyBytes_CheckExact(key))
                Py_RETURN_FALSE;
            size += PyBytes_GET_SIZE(key);
        }
        if (headers != Py_None && !usual_headers(PyList_GET_ITEM(headers, i), &header_size))
            Py_RETURN_FALSE;
        if (size + header_size > limit)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* A record's partition: the given one, else murmur2 of its key, else `count` (the sticky
 * partitioner's, decided per batch by the accumulator). */
static Py_ssize_t
chosen_partition(PyObject *given, PyObject *key, Py_ssize_t count)
{
    if (given != NULL && given != Py_None) {
        Py_ssize_t p = PyLong_AsSsize_t(given);
        if (p == -1 && PyErr_Occurred())
            return -1;
        if (p < 0 || p >= count) {
            PyErr_Format(PyExc_ValueError, "partition %zd is outside 0..%zd", p, count - 1);
            return -1;
        }
        return p;
    }
    if (key == Py_None)
        return count;
    if (PyBytes_CheckExact(key)) {
        uint32_t h = (uint32_t)murmur2((const unsigned char *)PyBytes_AS_STRING(key),
                                       PyBytes_GET_SIZE(key));
        return (Py_ssize_t)(h & 0x7fffffffu) % count;
    }
    BytesArg data;
    if (bytes_arg(key, "key", &data) < 0)
        return -1;
    uint32_t h = (uint32_t)murmur2((const unsigned char *)data.data, data.size);
    bytes_arg_release(&data);
    return (Py_ssize_t)(h & 0x7fffffffu) % count;
}

/* bytes holding `n` Py_ssize_t as a memoryview of format 'n' (a sequence of ints). */
static PyObject *
positions_view(PyObject *bytes)
{
    PyObject *raw = PyMemoryView_FromObject(bytes);
    if (raw == NULL)
        return NULL;
    PyObject *view = PyObject_CallMethod(raw, "cast", "s", "n");
    Py_DECREF(raw);
    return view;
}

/* The input positions per partition, in input order, for the partitions send() would choose
 * (see chosen_partition); keys and partitions: None or one per record. */
static PyObject *
core_group_positions(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "group_positions() takes count, keys, partitions, partition_count");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]), count = PyLong_AsSsize_t(args[3]);
    if ((n == -1 || count == -1) && PyErr_Occurred())
        return NULL;
    if (count <= 0 || n < 0) {
        PyErr_Format(PyExc_ValueError, "count %zd and partition_count %zd: must be >= 0 and > 0",
                     n, count);
        return NULL;
    }
    PyObject *kseq = NULL, *pseq = NULL, *result = NULL, **groups = NULL;
    Py_ssize_t *chosen = NULL, *sizes = NULL;
    if (args[1] != Py_None && (kseq = PySequence_Fast(args[1], "keys must be a sequence")) == NULL)
        goto done;
    if (args[2] != Py_None &&
        (pseq = PySequence_Fast(args[2], "partitions must be a sequence")) == NULL)
        goto done;
    if ((kseq && PySequence_Fast_GET_SIZE(kseq) != n) ||
        (pseq && PySequence_Fast_GET_SIZE(pseq) != n)) {
        PyErr_SetString(PyExc_ValueError, "keys and partitions must have one item per record");
        goto done;
    }
    chosen = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    sizes = PyMem_Calloc((size_t)count + 1, sizeof(Py_ssize_t));
    groups = PyMem_Calloc((size_t)count + 1, sizeof(PyObject *));
    if (chosen == NULL || sizes == NULL || groups == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject **k = kseq ? PySequence_Fast_ITEMS(kseq) : NULL;
    PyObject **given = pseq ? PySequence_Fast_ITEMS(pseq) : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        chosen[i] = chosen_partition(given ? given[i] : NULL, k ? k[i] : Py_None, count);
        if (chosen[i] < 0)
            goto done;
        sizes[chosen[i]]++;
    }
    for (Py_ssize_t p = 0; p <= count; p++) {
        if (sizes[p] == 0)
            continue;
        groups[p] = PyBytes_FromStringAndSize(NULL, sizes[p] * (Py_ssize_t)sizeof(Py_ssize_t));
        if (groups[p] == NULL)
            goto done;
        sizes[p] = 0; /* from here on: positions written */
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t p = chosen[i];
        ((Py_ssize_t *)PyBytes_AS_STRING(groups[p]))[sizes[p]++] = i;
    }
    if ((result = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t p = 0; p <= count; p++) {
        if (groups[p] == NULL)
            continue;
        PyObject *view = positions_view(groups[p]);
        PyObject *group = view == NULL ? NULL
                          : p == count ? PyTuple_Pack(2, Py_None, view)
                                       : Py_BuildValue("(nO)", p, view);
        Py_XDECREF(view);
        if (group == NULL || PyList_Append(result, group) < 0) {
            Py_XDECREF(group);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(group);
    }
done:
    if (groups != NULL)
        for (Py_ssize_t p = 0; p <= count; p++)
            Py_XDECREF(groups[p]);
    PyMem_Free(groups);
    PyMem_Free(sizes);
    PyMem_Free(chosen);
    Py_XDECREF(kseq);
    Py_XDECREF(pseq);
    return result;
}

static PyObject *
core_crc32c(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32c() takes data[, crc]");
        return NULL;
    }
    unsigned long crc = 0;
    if (nargs == 2) {
        crc = PyLong_AsUnsignedLong(args[1]);
        if (crc == (unsigned long)-1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    uint32_t result = crc32c((uint32_t)crc, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(result);
}

/* ------------------------------------------------------------------------------------------
 * Produce response decoding (the I/O thread's fast path; kafkaline.protocol.api.produce's
 * _decode_usual_flexible is the reference, and a test requires equal objects from both).
 *
 * A v9+ ProduceResponse body in its usual shape:
 *   topics          compact count (uvarint n + 1, at most three bytes here)
 *     name          compact string (length likewise), UTF-8
 *     partitions    compact count
 *       index int32, error_code int16, base_offset int64, log_append_time_ms int64,
 *       log_start_offset int64, record_errors 0x01 (empty), error_message 0x00 (null),
 *       tagged fields 0x00 (none)
 *     tagged fields 0x00
 *   throttle_time_ms int32, tagged fields 0x00, and nothing after.
 * Anything else gives None (the generic decoder then decides, and names what is wrong).
 * ------------------------------------------------------------------------------------------ */

enum {
    PR_INDEX, PR_ERROR_CODE, PR_BASE_OFFSET, PR_LOG_APPEND_TIME, PR_LOG_START_OFFSET,
    PR_RECORD_ERRORS, PR_ERROR_MESSAGE, PR_CURRENT_LEADER, PR_LEADER_ID, PR_LEADER_EPOCH,
    PR_NAME, PR_PARTITION_RESPONSES, PR_NAME_COUNT
};
static PyObject *pr_names[PR_NAME_COUNT];
static PyObject *pr_str_responses, *pr_str_throttle, *pr_str_node_endpoints, *pr_empty_tuple;

static int
pr_init_names(void)
{
    static const char *const names[PR_NAME_COUNT] = {
        "index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset",
        "record_errors", "error_message", "current_leader", "leader_id", "leader_epoch",
        "name", "partition_responses"};
    if (pr_empty_tuple != NULL)
        return 0;
    for (int i = 0; i < PR_NAME_COUNT; i++)
        if ((pr_names[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    if ((pr_str_responses = PyUnicode_InternFromString("responses")) == NULL ||
        (pr_str_throttle = PyUnicode_InternFromString("throttle_time_ms")) == NULL ||
        (pr_str_node_endpoints = PyUnicode_InternFromString("node_endpoints")) == NULL ||
        (pr_empty_tuple = PyTuple_New(0)) == NULL)
        return -1;
    return 0;
}

/* A compact count of at most three bytes at *pos: n (-1 for null or a longer varint, as the
 * reference), -2 if the data ends first. */
static Py_ssize_t
pr_read_count(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos)
{
    Py_ssize_t value = 0;
    for (int i = 0; i < 3; i++) {
        if (*pos + i >= end)
            return -2;
        unsigned char byte = data[*pos + i];
        value |= (Py_ssize_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            *pos += i + 1;
            return value - 1;
        }
    }
    return -1;
}

static int64_t
pr_int(const unsigned char *p, int size)
{
    uint64_t value = 0;
    for (int i = 0; i < size; i++)
        value = (value << 8) | p[i];
    if (size < 8 && (value >> (8 * size - 1)))
        value |= ~(uint64_t)0 << (8 * size); /* sign-extend */
    return (int64_t)value;
}

/* object.__new__(cls): the fields are set one by one after it, as the reference does. */
static PyObject *
pr_new(PyObject *cls)
{
    return PyBaseObject_Type.tp_new((PyTypeObject *)cls, pr_empty_tuple, NULL);
}

/* Set obj.name = value, stealing value (NULL: its allocation failed, -1 returned). */
static int
pr_set(PyObject *obj, PyObject *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyObject_SetAttr(obj, name, value);
    Py_DECREF(value);
    return rc;
}

/* Where the slot of a field is in its class's objects, or -1: setattr's own lookup (the
 * type's MRO, the descriptor, interning the name) cost more than the rest of a partition's
 * decoding, and a response has one object per partition. Only a plain writable object slot
 * of a class with the default __setattr__ qualifies; anything else goes through pr_set. */
static Py_ssize_t
pr_slot_offset(PyObject *cls, PyObject *name)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    if (type->tp_setattro != PyObject_GenericSetAttr)
        return -1;
    PyObject *descr = _PyType_Lookup(type, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY))
        return -1;
    return member->offset;
}

/* A class's version tag, 0 when it has none (changing a class changes its tag, so an
 * offset found under one tag holds while the class keeps it). */
static unsigned int
pr_version(PyObject *cls)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    return (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
}

/* The slot offsets of the four classes' fields, found again when another class comes (or
 * one of them changed). */
enum { PR_CLASS_RESPONSE, PR_CLASS_TOPIC, PR_CLASS_PARTITION, PR_CLASS_LEADER, PR_CLASS_COUNT };
static PyObject *pr_cached_class[PR_CLASS_COUNT];
static unsigned int pr_cached_version[PR_CLASS_COUNT];
static Py_ssize_t pr_offset[PR_NAME_COUNT];
static Py_ssize_t pr_offset_responses, pr_offset_throttle, pr_offset_node_endpoints;

static void
pr_find_offsets(PyObject *const *classes)
{
    int same = 1;
    for (int i = 0; i < PR_CLASS_COUNT; i++)
        same &= pr_cached_class[i] == classes[i] && pr_cached_version[i] != 0 &&
                pr_cached_version[i] == pr_version(classes[i]);
    if (same)
        return;
    for (int i = 0; i < PR_CLASS_COUNT; i++)
        Py_XSETREF(pr_cached_class[i], Py_NewRef(classes[i]));
    PyObject *partition = classes[PR_CLASS_PARTITION], *leader = classes[PR_CLASS_LEADER];
    PyObject *topic = classes[PR_CLASS_TOPIC], *response = classes[PR_CLASS_RESPONSE];
    for (int i = PR_INDEX; i <= PR_CURRENT_LEADER; i++)
        pr_offset[i] = pr_slot_offset(partition, pr_names[i]);
    pr_offset[PR_LEADER_ID] = pr_slot_offset(leader, pr_names[PR_LEADER_ID]);
    pr_offset[PR_LEADER_EPOCH] = pr_slot_offset(leader, pr_names[PR_LEADER_EPOCH]);
    pr_offset[PR_NAME] = pr_slot_offset(topic, pr_names[PR_NAME]);
    pr_offset[PR_PARTITION_RESPONSES] = pr_slot_offset(topic, pr_names[PR_PARTITION_RESPONSES]);
    pr_offset_responses = pr_slot_offset(response, pr_str_responses);
    pr_offset_throttle = pr_slot_offset(response, pr_str_throttle);
    pr_offset_node_endpoints = pr_slot_offset(response, pr_str_node_endpoints);
    /* Read after the lookups, which give a class its tag if it had none. */
    for (int i = 0; i < PR_CLASS_COUNT; i++)
        pr_cached_version[i] = pr_version(classes[i]);
}

/* pr_set() into the slot at offset when there is one (obj was just made: the slot is empty
 * or holds what an earlier store put there). */
static int
pr_store(PyObject *obj, Py_ssize_t offset, PyObject *name, PyObject *value)
{
    if (offset < 0)
        return pr_set(obj, name, value);
    if (value == NULL)
        return -1;
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_XSETREF(*slot, value);
    return 0;
}

#define PR_STORE(obj, field, value) pr_store((obj), pr_offset[field], pr_names[field], (value))

static PyObject *
core_decode_produce_response(PyObject *Py_UNUSED(module), PyObject *const *args,
                             Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_produce_response() takes data, response_type, topic_type, "
                        "partition_type, leader_type");
        return NULL;
    }
    if (pr_init_names() < 0)
        return NULL;
    PyObject *response_type = args[1], *topic_type = args[2], *partition_type = args[3];
    PyObject *leader_type = args[4];
    for (int i = 1; i < 5; i++)
        if (!PyType_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "decode_produce_response(): argument %d must be a "
                         "class, not %.100s", i + 1, Py_TYPE(args[i])->tp_name);
            return NULL;
        }
    pr_find_offsets(args + 1);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t end = view.len, pos = 0;
    PyObject *topics = NULL, *partitions = NULL, *leader = NULL, *obj = NULL, *result = NULL;
    int usual = 0; /* 1 once the whole body was read in the usual shape */

    Py_ssize_t topic_count = pr_read_count(data, end, &pos);
    if (topic_count < 0)
        goto done;
    if ((topics = PyList_New(0)) == NULL)
        goto error;
    for (Py_ssize_t t = 0; t < topic_count; t++) {
        Py_ssize_t name_size = pr_read_count(data, end, &pos);
        if (name_size < 0 || pos + name_size > end)
            goto done;
        PyObject *name = PyUnicode_DecodeUTF8((const char *)data + pos, name_size, NULL);
        if (name == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                goto error;
            PyErr_Clear();
            goto done;
        }
        pos += name_size;
        Py_ssize_t partition_count = pr_read_count(data, end, &pos);
        if (partition_count < 0) {
            Py_DECREF(name);
            goto done;
        }
        /* One default current_leader per topic, shared by its partitions (as the reference). */
        if ((leader = pr_new(leader_type)) == NULL ||
            PR_STORE(leader, PR_LEADER_ID, PyLong_FromLong(-1)) < 0 ||
            PR_STORE(leader, PR_LEADER_EPOCH, PyLong_FromLong(-1)) < 0 ||
            (partitions = PyList_New(0)) == NULL) {
            Py_DECREF(name);
            goto error;
        }
        for (Py_ssize_t p = 0; p < partition_count; p++) {
            if (end - pos < 33 || data[pos + 30] != 0x01 || data[pos + 31] != 0x00 ||
                data[pos + 32] != 0x00) {
                Py_DECREF(name);
                goto done;
            }
            const unsigned char *fixed = data + pos;
            pos += 33;
            if ((obj = pr_new(partition_type)) == NULL ||
                PR_STORE(obj, PR_INDEX, PyLong_FromLongLong(pr_int(fixed, 4))) < 0 ||
                PR_STORE(obj, PR_ERROR_CODE,
                         PyLong_FromLongLong(pr_int(fixed + 4, 2))) < 0 ||
                PR_STORE(obj, PR_BASE_OFFSET,
                         PyLong_FromLongLong(pr_int(fixed + 6, 8))) < 0 ||
                PR_STORE(obj, PR_LOG_APPEND_TIME,
                         PyLong_FromLongLong(pr_int(fixed + 14, 8))) < 0 ||
                PR_STORE(obj, PR_LOG_START_OFFSET,
                         PyLong_FromLongLong(pr_int(fixed + 22, 8))) < 0 ||
                PR_STORE(obj, PR_RECORD_ERRORS, PyList_New(0)) < 0 ||
                PR_STORE(obj, PR_ERROR_MESSAGE, Py_NewRef(Py_None)) < 0 ||
                PR_STORE(obj, PR_CURRENT_LEADER, Py_NewRef(leader)) < 0 ||
                PyList_Append(partitions, obj) < 0) {
                Py_DECREF(name);
                goto error;
            }
            Py_CLEAR(obj);
        }
        if (pos >= end || data[pos] != 0) { /* the topic's tagged fields */
            Py_DECREF(name);
            goto done;
        }
        pos += 1;
        if ((obj = pr_new(topic_type)) == NULL) {
            Py_DECREF(name);
            goto error;
        }
        if (PR_STORE(obj, PR_NAME, name) < 0 ||
            PR_STORE(obj, PR_PARTITION_RESPONSES, Py_NewRef(partitions)) < 0 ||
            PyList_Append(topics, obj) < 0)
            goto error;
        Py_CLEAR(obj);
        Py_CLEAR(partitions);
        Py_CLEAR(leader);
    }
    if (end - pos != 5 || data[pos + 4] != 0) /* throttle, no tagged fields, nothing after */
        goto done;
    if ((obj = pr_new(response_type)) == NULL ||
        pr_store(obj, pr_offset_responses, pr_str_responses, Py_NewRef(topics)) < 0 ||
        pr_store(obj, pr_offset_throttle, pr_str_throttle,
                 PyLong_FromLongLong(pr_int(data + pos, 4))) < 0 ||
        pr_store(obj, pr_offset_node_endpoints, pr_str_node_endpoints, PyList_New(0)) < 0)
        goto error;
    result = obj;
    obj = NULL;
    usual = 1;
done:
    if (!usual)
        result = Py_NewRef(Py_None);
error:
    Py_XDECREF(obj);
    Py_XDECREF(leader);
    Py_XDECREF(partitions);
    Py_XDECREF(topics);
    PyBuffer_Release(&view);
    return result;
}

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
        if (!PyMemoryView_Check(records)) {
            Py_DECREF(records);
            return PW_NOT_USUAL; /* null records (or not bytes): the generic way */
        }
        /* A view (its size in bytes may not be its len()): the records field's own writer. */
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
    Py_ssize_t size = PyBytes_Check(records) ? PyBytes_GET_SIZE(records)
                                             : PyByteArray_GET_SIZE(records);
    if ((uint64_t)size >= ((uint64_t)1 << 32) - 1) {
        Py_DECREF(records);
        return PW_NOT_USUAL;
    }
    /* index, then the records' compact length (uvarint of size + 1, at most five bytes) */
    unsigned char head[9];
    int head_size = 4;
    for (int i = 3; i >= 0; i--, index >>= 8)
        head[i] = (unsigned char)(index & 0xFF);
    uint64_t length = (uint64_t)size + 1;
    while (length >= 0x80) {
        head[head_size++] = (unsigned char)((length & 0x7F) | 0x80);
        length >>= 7;
    }
    head[head_size++] = (unsigned char)length;
    if (deferred != Py_None && size >= scatter_min) {
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
        rc = PyList_Append(deferred, entry);
        Py_DECREF(entry);
        if (rc < 0)
            return -1;
        return pw_append(out, "", 1) < 0 ? -1 : 0; /* the partition's tagged fields */
    }
    /* Head, records and the partition's tagged fields (none) in one resize. records may be
     * out itself only in a caller's bug; its data is read after the resize (a bytearray's
     * buffer moves when it grows). */
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
pw_write(PyObject *out, PyObject *request, PyObject *deferred, PyObject *write_records,
         Py_ssize_t scatter_min)
{
    int rc;
    PyObject *txn = pw_attr(request, pw_str_transactional_id);
    if (txn == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    rc = txn == Py_None ? 0 : PW_NOT_USUAL;
    Py_DECREF(txn);
    if (rc != 0)
        return rc;
    PyObject *acks_obj = pw_attr(request, pw_str_acks);
    if (acks_obj == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    long long acks, timeout;
    rc = pw_int_in(acks_obj, INT16_MIN, INT16_MAX, &acks);
    Py_DECREF(acks_obj);
    if (rc != 0)
        return rc;
    PyObject *timeout_obj = pw_attr(request, pw_str_timeout_ms);
    if (timeout_obj == NULL)
        return PyErr_Occurred() ? -1 : PW_NOT_USUAL;
    rc = pw_int_in(timeout_obj, INT32_MIN, INT32_MAX, &timeout);
    Py_DECREF(timeout_obj);
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
    rc = 0;
    for (Py_ssize_t t = 0; rc == 0 && t < PySequence_Fast_GET_SIZE(topics); t++) {
        /* Held while written: write_records is Python code and could change the lists. */
        PyObject *topic = Py_NewRef(PySequence_Fast_GET_ITEM(topics, t));
        PyObject *name = pw_attr(topic, pr_names[PR_NAME]);
        PyObject *partitions = name == NULL ? NULL : pw_attr(topic, pw_str_partition_data);
        Py_DECREF(topic);
        if (name == NULL || partitions == NULL) {
            rc = PyErr_Occurred() ? -1 : PW_NOT_USUAL;
            Py_XDECREF(name);
            break;
        }
        Py_ssize_t name_size;
        const char *utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &name_size)
                                                 : NULL;
        if (utf8 == NULL) {
            Py_DECREF(name);
            Py_XDECREF(partitions);
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_UnicodeError)) {
                rc = -1;
                break;
            }
            PyErr_Clear();
            rc = PW_NOT_USUAL;
            break;
        }
        if (!PyList_Check(partitions) && !PyTuple_Check(partitions)) {
            Py_DECREF(partitions);
            Py_DECREF(name);
            rc = PW_NOT_USUAL;
            break;
        }
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

PyMODINIT_FUNC
PyInit__record_core(void)
{
    crc_init();
    if (PyType_Ready(&BuilderType) < 0 || PyType_Ready(&SenderType) < 0 ||
        PyType_Ready(&QueueLockType) < 0 || PyType_Ready(&RecordFutureType) < 0 || PyType_Ready(&BatchResultType) < 0)
        return NULL;
    if ((str_queues = PyUnicode_InternFromString("_queues")) == NULL ||
        (str_lock = PyUnicode_InternFromString("lock")) == NULL ||
        (str_batches = PyUnicode_InternFromString("batches")) == NULL ||
        (str_builder = PyUnicode_InternFromString("builder")) == NULL ||
        (str_result = PyUnicode_InternFromString("result")) == NULL ||
        (str_sticky = PyUnicode_InternFromString("_sticky")) == NULL ||
        (str_current = PyUnicode_InternFromString("_current")) == NULL ||
        (str_partition = PyUnicode_InternFromString("partition")) == NULL ||
        (str_produced_bytes = PyUnicode_InternFromString("produced_bytes")) == NULL ||
        (str_sticky_batch_size = PyUnicode_InternFromString("sticky_batch_size")) == NULL ||
        (str_release = PyUnicode_InternFromString("release")) == NULL ||
        (str_run_hook = PyUnicode_InternFromString("_run_hook")) == NULL ||
        (str_add_hook = PyUnicode_InternFromString("add_hook")) == NULL ||
        (str_waits_for_itself = PyUnicode_InternFromString("_waits_for_itself")) == NULL ||
        (str_value = PyUnicode_InternFromString("value")) == NULL ||
        (str_traceback = PyUnicode_InternFromString("__traceback__")) == NULL ||
        (minus_one = PyLong_FromLong(-1)) == NULL)
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
        PyModule_AddObjectRef(module, "OpenBatchSender", (PyObject *)&SenderType) < 0 ||
        PyModule_AddObjectRef(module, "QueueLock", (PyObject *)&QueueLockType) < 0 ||
        PyModule_AddObjectRef(module, "RecordFuture", (PyObject *)&RecordFutureType) < 0 ||
        PyModule_AddObjectRef(module, "BatchResult", (PyObject *)&BatchResultType) < 0 ||
        PyModule_AddStringConstant(module, "BUILD", "compiled") < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
