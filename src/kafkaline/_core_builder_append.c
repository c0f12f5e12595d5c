/* kafkaline._record_core: the builder: one record encoded and appended.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* Check one header pair (a (str, bytes-like or None) pair) and add its encoded size to *size. */
static int
header_pair_size(PyObject *pair, Py_ssize_t *size)
{
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyObject *fast = PySequence_Fast(pair, "a header must be a (str, bytes) pair");
        if (fast == NULL)
            return -1;
        Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
        Py_DECREF(fast);
        if (len != 2) {
            PyErr_Format(PyExc_ValueError, "a header must be a (str, bytes) pair, not %zd items",
                         len);
            return -1;
        }
    }
    PyObject *key = PySequence_GetItem(pair, 0);
    if (key == NULL)
        return -1;
    if (!PyUnicode_Check(key)) {
        PyErr_Format(PyExc_TypeError, "header key must be str, not %.200s",
                     Py_TYPE(key)->tp_name);
        Py_DECREF(key);
        return -1;
    }
    Py_ssize_t klen;
    const char *kdata = PyUnicode_AsUTF8AndSize(key, &klen);
    Py_DECREF(key);
    if (kdata == NULL)
        return -1;
    *size += varint_size(zigzag(klen)) + klen;
    PyObject *value = PySequence_GetItem(pair, 1);
    if (value == NULL)
        return -1;
    int rc = 0;
    if (value == Py_None) {
        *size += 1;
    }
    else {
        BytesArg arg;
        rc = bytes_arg(value, "header value", &arg);
        if (rc == 0) {
            *size += varint_size(zigzag(arg.size)) + arg.size;
            bytes_arg_release(&arg);
        }
    }
    Py_DECREF(value);
    return rc;
}

/* Write one pair checked by header_pair_size() at *p, moving *p past it, never past `end`: a
 * pair read again may differ (a custom sequence's __getitem__), and then it raises. */
static int
put_header_pair(unsigned char **p, const unsigned char *end, PyObject *pair)
{
    PyObject *key = PySequence_GetItem(pair, 0);
    if (key == NULL)
        return -1;
    Py_ssize_t klen;
    const char *kdata = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &klen) : NULL;
    if (kdata == NULL || end - *p < varint_size(zigzag(klen)) + klen) {
        Py_DECREF(key);
        goto changed;
    }
    *p = put_varint(*p, zigzag(klen));
    memcpy(*p, kdata, klen);
    *p += klen;
    Py_DECREF(key);
    PyObject *value = PySequence_GetItem(pair, 1);
    if (value == NULL)
        return -1;
    int rc = 0;
    if (value == Py_None) {
        rc = end - *p < 1 ? 1 : 0;
        if (rc == 0)
            *p = put_varint(*p, zigzag(-1));
    }
    else {
        BytesArg arg;
        rc = bytes_arg(value, "header value", &arg); /* fails if changed meanwhile */
        if (rc == 0) {
            if (end - *p < varint_size(zigzag(arg.size)) + arg.size) {
                rc = 1;
            }
            else {
                *p = put_varint(*p, zigzag(arg.size));
                memcpy(*p, arg.data, arg.size);
                *p += arg.size;
            }
            bytes_arg_release(&arg);
        }
    }
    Py_DECREF(value);
    if (rc <= 0)
        return rc;
changed:
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "a header pair changed while its record was encoded");
    return -1;
}

/* The header_count and headers fields, encoded into a new bytes object (NULL on error): sized
 * and checked first, so that the block is made once at its exact size. */
static PyObject *
encode_headers(PyObject *headers)
{
    PyObject *seq = PySequence_Fast(headers, "headers must be a sequence of (str, bytes) pairs");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t size = varint_size(zigzag(n));
    PyObject *block = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (header_pair_size(items[i], &size) < 0)
            goto done;
    block = PyBytes_FromStringAndSize(NULL, size);
    if (block == NULL)
        goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(block);
    const unsigned char *end = p + size;
    p = put_varint(p, zigzag(n));
    for (Py_ssize_t i = 0; i < n; i++)
        if (put_header_pair(&p, end, items[i]) < 0) {
            Py_CLEAR(block);
            goto done;
        }
    if (p != end) { /* a pair read again came out shorter: the block would hold garbage */
        PyErr_SetString(PyExc_ValueError, "a header pair changed while its record was encoded");
        Py_CLEAR(block);
    }
done:
    Py_DECREF(seq);
    return block;
}

/* Results of try_append. */
#define APPENDED 0
#define NO_ROOM 1
#define FAILED -1

/* A record's body size (after its length varint) as the batch's next record; key_size or
 * value_size -1 for null, header_size -1 for no header block. */
static inline int64_t
record_body_size(const Builder *self, uint64_t ts_z, Py_ssize_t key_size, Py_ssize_t value_size,
                 Py_ssize_t header_size)
{
    uint64_t key_z = key_size < 0 ? 1 : zigzag(key_size);
    uint64_t value_z = value_size < 0 ? 1 : zigzag(value_size);
    return 1 + varint_size(ts_z) + varint_size(zigzag(self->count)) + varint_size(key_z) +
           (key_size < 0 ? 0 : key_size) + varint_size(value_z) +
           (value_size < 0 ? 0 : value_size) + (header_size < 0 ? 1 : header_size);
}

/* Whether a record without headers could not go into the batch whatever memory it held:
 * what append() refuses (closed, or past the batch's limit), without encoding it. */
static int
builder_has_no_room(const Builder *self, int64_t timestamp, Py_ssize_t key_size,
                    Py_ssize_t value_size)
{
    if (self->closed || self->count >= INT32_MAX)
        return 1;
    if (self->count == 0)
        return 0;
    int64_t delta;
    if (__builtin_sub_overflow(timestamp, self->base_timestamp, &delta))
        delta = 0; /* as try_append() sizes it */
    int64_t body = record_body_size(self, zigzag(delta), key_size, value_size, -1);
    return self->used + varint_size(zigzag(body)) + body > self->limit;
}

/* The timestamp's delta from the batch's first. The reference fails the batch when it encodes
 * a delta outside int64: at seal, so here the delta is 0 and seal() raises the reason. */
static inline int
record_timestamp_delta(Builder *self, int64_t timestamp, int64_t *delta)
{
    int64_t base = self->count ? self->base_timestamp : timestamp;
    if (!__builtin_sub_overflow(timestamp, base, delta))
        return 0;
    *delta = 0;
    if (self->bad_timestamp == NULL) {
        self->bad_timestamp = PyUnicode_FromFormat(
            "timestamp %lld is too far from the batch's first, %lld, for an int64 delta",
            (long long)timestamp, (long long)base);
        if (self->bad_timestamp == NULL)
            return -1;
    }
    return 0;
}

/* Whether a record of `total` bytes goes into the batch under `limit`; the first one always
 * does, up to the largest batch. */
static inline int
record_fits(const Builder *self, int64_t total, Py_ssize_t limit)
{
    if (self->count)
        return self->used + total > limit ? NO_ROOM : APPENDED;
    if (HEADER_SIZE + total <= MAX_BATCH_SIZE)
        return APPENDED;
    PyErr_Format(record_too_large_error,
                 "a record of %lld bytes cannot fit a record batch (at most %lld bytes)",
                 (long long)total, (long long)MAX_BATCH_SIZE);
    return FAILED;
}

/* The record's fields after its length: attributes, deltas, key, value, headers (a header
 * block, or a header_count of 0 when header_block is NULL); the end. */
KL_ALWAYS_INLINE unsigned char *
put_record_fields(unsigned char *p, uint64_t ts_z, uint64_t off_z, const char *key,
                  Py_ssize_t key_size, const char *value, Py_ssize_t value_size,
                  const char *header_block, Py_ssize_t header_size)
{
    *p++ = 0;
    p = put_varint(p, ts_z);
    p = put_varint(p, off_z);
    /* sizes are >= 0: zigzag(n) is n << 1 */
    p = put_varint(p, key == NULL ? 1 : (uint64_t)key_size << 1);
    if (key != NULL)
        p = put_bytes(p, key, key_size);
    p = put_varint(p, value == NULL ? 1 : (uint64_t)value_size << 1);
    if (value != NULL)
        p = put_bytes(p, value, value_size);
    if (header_block == NULL) {
        *p++ = 0;
        return p;
    }
    memcpy(p, header_block, header_size);
    return p + header_size;
}

/* The batch's size, timestamps and count after a record of `total` bytes. */
static inline void
builder_count_record(Builder *self, int64_t total, int64_t timestamp)
{
    self->used += (Py_ssize_t)total;
    if (self->count == 0) {
        self->base_timestamp = timestamp;
        self->max_timestamp = timestamp;
    }
    else if (timestamp > self->max_timestamp) {
        self->max_timestamp = timestamp;
    }
    self->count++;
}

/* Encode one record into the batch if it fits under `limit` (exactly; the first record always
 * fits, up to the largest batch). */
static int
try_append(Builder *self, int64_t timestamp, const char *key, Py_ssize_t key_size,
           const char *value, Py_ssize_t value_size, const char *header_block,
           Py_ssize_t header_size, Py_ssize_t limit)
{
    int64_t delta;
    if (record_timestamp_delta(self, timestamp, &delta) < 0)
        return FAILED;
    if (self->count >= INT32_MAX)
        return NO_ROOM;
    uint64_t ts_z = zigzag(delta);
    int64_t body = record_body_size(self, ts_z, key == NULL ? -1 : key_size,
                                    value == NULL ? -1 : value_size,
                                    header_block ? header_size : -1);
    uint64_t body_z = zigzag(body);
    int64_t total = varint_size(body_z) + body;
    int fits = record_fits(self, total, limit);
    if (fits != APPENDED)
        return fits;
    if (builder_reserve(self, (Py_ssize_t)total) < 0)
        return FAILED;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(self->buffer) + self->used;
    p = put_varint(p, body_z);
    put_record_fields(p, ts_z, zigzag(self->count), key, key_size, value, value_size,
                      header_block, header_size);
    builder_count_record(self, total, timestamp);
    return APPENDED;
}

/* The most bytes a record without headers takes besides its key and value: length (5),
 * attributes (1), timestamp and offset deltas (10 + 5), key and value lengths (5 + 5),
 * header count (1). */
#define PLAIN_RECORD_OVERHEAD_MAX 32

/* try_append() of a record without headers (key or value NULL: null), its common case
 * inlined into send() and append_many(): a batch with records whose buffer has room for the
 * record's largest size. Its fields are written first, after two bytes for the length (the
 * length of a 64 to 8191-byte record), and moved when the length takes another size: no
 * sizing pass over the fields. The rest (the first record, a delta outside int64, a buffer
 * to grow) takes try_append(), which writes the same bytes. */
KL_ALWAYS_INLINE int
try_append_plain(Builder *self, int64_t timestamp, const char *key, Py_ssize_t key_size,
                 const char *value, Py_ssize_t value_size, Py_ssize_t limit)
{
    int64_t delta;
    Py_ssize_t payload = (key ? key_size : 0) + (value ? value_size : 0);
    if (self->count == 0 || self->count >= INT32_MAX ||
        __builtin_sub_overflow(timestamp, self->base_timestamp, &delta) ||
        payload > self->capacity - self->used - PLAIN_RECORD_OVERHEAD_MAX)
        return try_append(self, timestamp, key, key_size, value, value_size, NULL, 0, limit);
    unsigned char *start = (unsigned char *)PyBytes_AS_STRING(self->buffer) + self->used;
    unsigned char *end = put_record_fields(start + 2, zigzag(delta), (uint64_t)self->count << 1,
                                           key, key_size, value, value_size, NULL, 0);
    int64_t body = end - (start + 2);
    uint64_t body_z = (uint64_t)body << 1; /* zigzag of a size */
    int length_size = varint_size(body_z);
    int64_t total = length_size + body;
    if (self->used + total > limit)
        return NO_ROOM; /* what was written past `used` is not the batch's */
    if (length_size != 2)
        memmove(start + length_size, start + 2, (size_t)body);
    put_varint(start, body_z);
    self->used += (Py_ssize_t)total;
    if (timestamp > self->max_timestamp)
        self->max_timestamp = timestamp;
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

static inline int
append_converted(Builder *self, int64_t timestamp, int out_of_range, PyObject *ts_obj,
                 PyObject *key_obj, PyObject *value_obj, PyObject *headers, Py_ssize_t limit)
{
    int rc;
    int no_key = key_obj == Py_None, no_value = value_obj == Py_None;
    if ((headers == NULL || headers == Py_None) && (no_key || PyBytes_CheckExact(key_obj)) &&
        (no_value || PyBytes_CheckExact(value_obj)))
        /* The usual record (send_batch()'s lists): bytes or None, nothing to convert. */
        rc = try_append_plain(self, timestamp, no_key ? NULL : PyBytes_AS_STRING(key_obj),
                              no_key ? 0 : PyBytes_GET_SIZE(key_obj),
                              no_value ? NULL : PyBytes_AS_STRING(value_obj),
                              no_value ? 0 : PyBytes_GET_SIZE(value_obj), limit);
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
