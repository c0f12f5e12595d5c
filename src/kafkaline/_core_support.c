/* kafkaline._record_core: helpers for Python objects, varints.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ----------------------------------------------------------------------- Python helpers */

/* For the few functions of send()'s path that the compiler would otherwise call. */
#if defined(__GNUC__) || defined(__clang__)
#define KL_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define KL_ALWAYS_INLINE static inline
#endif

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

/* A varint's size by its number of significant bits: a load instead of a loop, as every
 * record sizes five of these. */
static const unsigned char varint_size_by_bits[65] = {
    1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10};

static inline int
varint_size(uint64_t z)
{
    return varint_size_by_bits[64 - __builtin_clzll(z | 1)];
}

/* Kafka keys are mostly 8 to 16 bytes: two overlapping word copies, not a call to memcpy. */
static inline unsigned char *
put_bytes(unsigned char *p, const char *src, Py_ssize_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t head, tail;
        memcpy(&head, src, 8);
        memcpy(&tail, src + n - 8, 8);
        memcpy(p, &head, 8);
        memcpy(p + n - 8, &tail, 8);
    }
    else {
        memcpy(p, src, n);
    }
    return p + n;
}

static inline unsigned char *
put_varint(unsigned char *p, uint64_t z)
{
    if (z < 0x4000) { /* a record's usual fields: without the loop's bookkeeping */
        if (z < 0x80) {
            *p = (unsigned char)z;
            return p + 1;
        }
        p[0] = (unsigned char)(z | 0x80);
        p[1] = (unsigned char)(z >> 7);
        return p + 2;
    }
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
