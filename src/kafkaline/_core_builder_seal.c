/* kafkaline._record_core: the builder: sealing, the batch header, attributes and the type.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

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

#define LZ4_CODEC_ID 3

/* The fast lz4 levels' frame is written here straight into the batch's bytes, as
 * compression.lz4_frame_encode_into() (the reference, with the frame's wire table) writes
 * it: its header, each 64 KiB block compressed by cramjam's compress_block_into() (the same
 * compressor, so the same bytes) or stored raw when it does not shrink, the end mark. What
 * it needs from the Python side is read once. */
static struct {
    PyObject *compress_into; /* cramjam.lz4.compress_block_into */
    PyObject *kwnames;       /* ("store_size",) */
    PyObject *header;        /* compression.LZ4_FRAME_HEADER */
    Py_ssize_t block_size, block_bound;
    long hc_min_level, default_level;
} lz4;

static int
lz4_frame_ready(void)
{
    if (lz4.compress_into != NULL)
        return 0;
    const char *module = "kafkaline.record.compression";
    PyObject *size = NULL, *hc = NULL, *level = NULL, *block = NULL, *bound = NULL, *codec;
    PyObject *cramjam_lz4 = import_attr("cramjam", "lz4");
    PyObject *header = import_attr(module, "LZ4_FRAME_HEADER");
    if (cramjam_lz4 == NULL || header == NULL || (size = import_attr(module, "LZ4_BLOCK_SIZE")) ==
        NULL || (hc = import_attr(module, "LZ4_HC_MIN_LEVEL")) == NULL)
        goto done;
    if ((codec = PyLong_FromLong(LZ4_CODEC_ID)) == NULL)
        goto done;
    level = PyObject_CallFunctionObjArgs(resolve_level_fn, codec, Py_None, NULL);
    Py_DECREF(codec);
    lz4.block_size = PyLong_AsSsize_t(size);
    if (level == NULL || lz4.block_size <= 0 || !PyBytes_CheckExact(header) ||
        (block = PyBytes_FromStringAndSize(NULL, lz4.block_size)) == NULL)
        goto done;
    memset(PyBytes_AS_STRING(block), 0, lz4.block_size);
    bound = PyObject_CallMethod(cramjam_lz4, "compress_block_bound", "O", block);
    lz4.block_bound = bound ? PyLong_AsSsize_t(bound) : -1;
    lz4.hc_min_level = PyLong_AsLong(hc);
    lz4.default_level = PyLong_AsLong(level);
    if (lz4.block_bound < lz4.block_size || PyErr_Occurred())
        goto done;
    Py_XSETREF(lz4.kwnames, Py_BuildValue("(s)", "store_size"));
    if (lz4.kwnames == NULL)
        goto done;
    Py_XSETREF(lz4.header, Py_NewRef(header));
    lz4.compress_into = PyObject_GetAttrString(cramjam_lz4, "compress_block_into");
done:
    if (lz4.compress_into == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "the lz4 frame's settings could not be read");
    Py_XDECREF(cramjam_lz4);
    Py_XDECREF(header);
    Py_XDECREF(size);
    Py_XDECREF(hc);
    Py_XDECREF(level);
    Py_XDECREF(block);
    Py_XDECREF(bound);
    return lz4.compress_into == NULL ? -1 : 0;
}

/* Drops a view made over memory this module owns: 0 once nothing can reach the memory
 * through it, else -1 (a buffer of it is still held elsewhere). */
static int
drop_view(PyObject *view)
{
    if (view == NULL)
        return 0;
    int unreachable = Py_REFCNT(view) == 1 && ((PyMemoryViewObject *)view)->exports == 0;
    if (!unreachable) {
        PyObject *done = PyObject_CallMethod(view, "release", NULL);
        unreachable = done != NULL;
        Py_XDECREF(done);
    }
    Py_DECREF(view);
    return unreachable ? 0 : -1;
}

/* One block of the frame at out (its size word, then its bytes), `room` bytes there at
 * least its bound: the bytes written, or -1 with an error set (*kept: a view into out is
 * still held, so out must never be freed). */
static Py_ssize_t
lz4_block_into(const char *block, Py_ssize_t size, unsigned char *out, Py_ssize_t room,
               int *kept)
{
    PyObject *in = PyMemoryView_FromMemory((char *)block, size, PyBUF_READ);
    PyObject *dst = in ? PyMemoryView_FromMemory((char *)out + 4, room - 4, PyBUF_WRITE) : NULL;
    PyObject *args[] = {in, dst, Py_False};
    PyObject *result = dst ? PyObject_Vectorcall(lz4.compress_into, args, 2, lz4.kwnames) : NULL;
    Py_ssize_t written = result ? PyLong_AsSsize_t(result) : -1;
    Py_XDECREF(result);
    *kept = drop_view(dst) < 0;
    if ((drop_view(in) < 0) | *kept)
        return -1; /* the block is the batch's buffer: the caller still holds it */
    if (written < 0 || written > room - 4) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "lz4 wrote %zd bytes into %zd", written, room - 4);
        return -1;
    }
    uint32_t word = (uint32_t)written;
    if (written >= size) { /* did not shrink: stored raw */
        memcpy(out + 4, block, size);
        word = (uint32_t)size | 0x80000000u;
    }
    out[0] = (unsigned char)word;
    out[1] = (unsigned char)(word >> 8);
    out[2] = (unsigned char)(word >> 16);
    out[3] = (unsigned char)(word >> 24);
    return 4 + (word & 0x7FFFFFFFu);
}

/* The frame of the records after HEADER_SIZE zero bytes of header room, trimmed in place
 * (realloc): compress()'s bytes without its copy out of a scratch buffer. */
static PyObject *
lz4_frame_in_place(const char *records, Py_ssize_t size)
{
    Py_ssize_t header = PyBytes_GET_SIZE(lz4.header), blocks = (size + lz4.block_size - 1) /
                                                             lz4.block_size;
    if (blocks > (PY_SSIZE_T_MAX / 2 - HEADER_SIZE - header - 4) / (4 + lz4.block_bound))
        return PyErr_NoMemory();
    Py_ssize_t end = HEADER_SIZE + header + blocks * (4 + lz4.block_bound) + 4;
    PyObject *payload = PyBytes_FromStringAndSize(NULL, end);
    if (payload == NULL)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(payload);
    memset(p, 0, HEADER_SIZE);
    memcpy(p + HEADER_SIZE, PyBytes_AS_STRING(lz4.header), header);
    Py_ssize_t pos = HEADER_SIZE + header;
    for (Py_ssize_t start = 0; start < size; start += lz4.block_size) {
        int kept = 0;
        Py_ssize_t n = size - start < lz4.block_size ? size - start : lz4.block_size;
        Py_ssize_t written = lz4_block_into(records + start, n, p + pos, end - 4 - pos, &kept);
        if (written < 0) {
            if (!kept) /* else leaked on purpose: something still points into it */
                Py_DECREF(payload);
            return NULL;
        }
        pos += written;
    }
    memset(p + pos, 0, 4); /* the end mark */
    if (_PyBytes_Resize(&payload, pos + 4) < 0)
        return NULL;
    return payload;
}

/* Whether the batch's lz4 level is a fast one, whose frame is written here. */
static int
lz4_level_is_fast(Builder *self)
{
    if (self->compression_level == Py_None)
        return lz4.default_level < lz4.hc_min_level;
    long level = PyLong_AsLong(self->compression_level);
    if (level == -1 && PyErr_Occurred())
        return -1;
    return level < lz4.hc_min_level;
}

/* The batch's payload: header room and compressed records, as compress_with_header_room()
 * gives it; the fast lz4 levels' frame in place. */
static PyObject *
compressed_payload(Builder *self)
{
    if (self->compression_id == LZ4_CODEC_ID) {
        int fast = lz4_frame_ready() < 0 ? -1 : lz4_level_is_fast(self);
        if (fast < 0)
            return NULL;
        if (fast)
            return lz4_frame_in_place(PyBytes_AS_STRING(self->buffer) + HEADER_SIZE,
                                      self->used - HEADER_SIZE);
    }
    PyObject *data = records_view(self->buffer, self->used);
    if (data == NULL)
        return NULL;
    PyObject *payload = compress_with_header_room(self, data);
    Py_DECREF(data);
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
        PyObject *payload = compressed_payload(self);
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
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Builder_init,
    .tp_dealloc = (destructor)Builder_dealloc,
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
