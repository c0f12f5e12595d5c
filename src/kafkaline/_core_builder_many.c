/* kafkaline._record_core: the builder: records appended many at a time, or already encoded.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* How many records ahead the append loop over send_batch()'s lists asks for a value's memory:
 * a partition's values are every few records of the lists, far apart in memory and mostly out
 * of the cache, an order the hardware's prefetch does not follow. */
#define LISTS_PREFETCH 8

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

/* append_many()'s columns as fast sequences of n items (headers and timestamps: NULL when
 * None and when one int for all). */
typedef struct {
    PyObject *kseq, *vseq, *tseq, *hseq;
    Py_ssize_t n;
} Columns;

static int
columns_open(PyObject *keys, PyObject *values, PyObject *timestamps, PyObject *headers,
             Columns *c)
{
    if ((c->kseq = PySequence_Fast(keys, "keys must be a sequence")) == NULL)
        return -1;
    if ((c->vseq = PySequence_Fast(values, "values must be a sequence")) == NULL)
        return -1;
    c->n = PySequence_Fast_GET_SIZE(c->vseq);
    if (headers != Py_None &&
        (c->hseq = PySequence_Fast(headers, "headers must be a sequence")) == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(c->kseq) != c->n ||
        (c->hseq != NULL && PySequence_Fast_GET_SIZE(c->hseq) != c->n)) {
        PyErr_SetString(PyExc_ValueError, "keys, values and headers must have the same length");
        return -1;
    }
    if (PyLong_Check(timestamps))
        return 0;
    if ((c->tseq = PySequence_Fast(timestamps, "timestamps must be one int or one per record")) ==
        NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(c->tseq) != c->n) {
        PyErr_SetString(PyExc_ValueError, "timestamps must be one int or one per record");
        return -1;
    }
    return 0;
}

static void
columns_close(Columns *c)
{
    Py_XDECREF(c->kseq);
    Py_XDECREF(c->vseq);
    Py_XDECREF(c->tseq);
    Py_XDECREF(c->hseq);
}

/* append_positions() for send_batch()'s lists (one timestamp for all, within int64; no
 * headers): what holds for the whole call is checked once, not per record. A record of bytes
 * or None takes try_append_plain(), anything else append_converted() as in the general loop;
 * the same bytes either way. */
static Py_ssize_t
append_plain_positions(Builder *self, const Columns *c, const Positions *order,
                       Py_ssize_t start, int64_t timestamp, PyObject *timestamps)
{
    PyObject **k = PySequence_Fast_ITEMS(c->kseq);
    PyObject **v = PySequence_Fast_ITEMS(c->vseq);
    const Py_ssize_t *items = order->items;
    Py_ssize_t n = c->n, taken = 0;
    for (Py_ssize_t j = start; j < order->count; j++) {
        /* position_at() for anything but a buffer's position in range (it raises) */
        Py_ssize_t i = items != NULL && (size_t)items[j] < (size_t)n ? items[j]
                                                                      : position_at(order, j, n);
        if (i < 0)
            return -1;
        if (items != NULL && j + LISTS_PREFETCH < order->count &&
            (size_t)items[j + LISTS_PREFETCH] < (size_t)n) {
            const char *ahead = (const char *)v[items[j + LISTS_PREFETCH]];
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + 64);
            __builtin_prefetch(ahead + 128);
        }
        PyObject *key = k[i], *value = v[i];
        int rc;
        if ((key == Py_None || PyBytes_CheckExact(key)) &&
            (value == Py_None || PyBytes_CheckExact(value))) {
            rc = try_append_plain(self, timestamp, key == Py_None ? NULL : PyBytes_AS_STRING(key),
                                  key == Py_None ? 0 : PyBytes_GET_SIZE(key),
                                  value == Py_None ? NULL : PyBytes_AS_STRING(value),
                                  value == Py_None ? 0 : PyBytes_GET_SIZE(value), self->limit);
        }
        else {
            rc = append_converted(self, timestamp, 0, timestamps, key, value, NULL, self->limit);
            if (rc == APPENDED && self->closed) /* a conversion ran Python code that closed it */
                return taken + 1;
        }
        if (rc != APPENDED)
            return rc == FAILED ? -1 : taken;
        taken++;
    }
    return taken;
}

/* Append the records at positions start.. in order until the batch is full: how many were
 * taken, or -1. */
static Py_ssize_t
append_positions(Builder *self, const Columns *c, const Positions *order, Py_ssize_t start,
                 PyObject *timestamps)
{
    PyObject **k = PySequence_Fast_ITEMS(c->kseq);
    PyObject **v = PySequence_Fast_ITEMS(c->vseq);
    PyObject **t = c->tseq ? PySequence_Fast_ITEMS(c->tseq) : NULL;
    PyObject **h = c->hseq ? PySequence_Fast_ITEMS(c->hseq) : NULL;
    /* One timestamp for all is converted once, not per record. */
    int64_t timestamp = 0;
    int out_of_range = 0;
    if (t == NULL && start < order->count && !self->closed &&
        as_timestamp(timestamps, &timestamp, &out_of_range) < 0)
        return -1;
    if (t == NULL && h == NULL && !out_of_range && !self->closed)
        return append_plain_positions(self, c, order, start, timestamp, timestamps);
    Py_ssize_t taken = 0;
    for (Py_ssize_t j = start; j < order->count && !self->closed; j++) {
        Py_ssize_t i = position_at(order, j, c->n);
        if (i < 0)
            return -1;
        PyObject *key = k[i], *value = v[i];
        int rc;
        if (t == NULL && !out_of_range && (h == NULL || h[i] == Py_None) &&
            (key == Py_None || PyBytes_CheckExact(key)) &&
            (value == Py_None || PyBytes_CheckExact(value)))
            /* send_batch()'s lists: append_converted()'s usual record, inlined */
            rc = try_append_plain(self, timestamp, key == Py_None ? NULL : PyBytes_AS_STRING(key),
                                  key == Py_None ? 0 : PyBytes_GET_SIZE(key),
                                  value == Py_None ? NULL : PyBytes_AS_STRING(value),
                                  value == Py_None ? 0 : PyBytes_GET_SIZE(value), self->limit);
        else if (t != NULL)
            rc = append_objects(self, t[i], key, value, h ? h[i] : NULL, self->limit);
        else
            rc = append_converted(self, timestamp, out_of_range, timestamps, key, value,
                                  h ? h[i] : NULL, self->limit);
        if (rc == FAILED)
            return -1;
        if (rc == NO_ROOM)
            break;
        taken++;
    }
    return taken;
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
    Columns columns = {.kseq = NULL, .vseq = NULL, .tseq = NULL, .hseq = NULL};
    Positions order = {.has_view = 0, .seq = NULL, .items = NULL, .objects = NULL};
    PyObject *result = NULL;
    if (columns_open(keys, values, timestamps, headers, &columns) < 0)
        goto done;
    order.count = columns.n;
    if (positions != Py_None && positions_open(positions, &order) < 0)
        goto done;
    if (start < 0 || start > order.count) {
        PyErr_Format(PyExc_ValueError, "start %zd is outside 0..%zd", start, order.count);
        goto done;
    }
    Py_ssize_t taken = append_positions(self, &columns, &order, start, timestamps);
    if (taken >= 0)
        result = PyLong_FromSsize_t(taken);
done:
    positions_close(&order);
    columns_close(&columns);
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

/* The records' total size in bytes, as their buffers give it (what copy_encoded() copies,
 * which len() is not for a memoryview of wider items); -1 on error. */
static Py_ssize_t
encoded_size(PyObject **items, Py_ssize_t n)
{
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer(items[i], &view, PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        size += view.len;
        PyBuffer_Release(&view);
    }
    return size;
}

/* Copy the records into the `room` bytes reserved for them after what the buffer holds; a
 * record whose buffer grew since encoded_size() raises instead of writing past the room. */
static int
copy_encoded(Builder *self, PyObject **items, Py_ssize_t n, Py_ssize_t room)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer(items[i], &view, PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        if (view.len > room) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "append_encoded(): a record changed size");
            return -1;
        }
        memcpy(PyBytes_AS_STRING(self->buffer) + self->used, view.buf, view.len);
        self->used += view.len;
        room -= view.len;
        PyBuffer_Release(&view);
    }
    return 0;
}

/* Records already encoded (as this batch's next ones) copied into the buffer, the batch held
 * to the largest size; -1 on error. */
static int
append_encoded_records(Builder *self, PyObject *records, long long count)
{
    PyObject *seq = PySequence_Fast(records, "records must be a sequence of bytes");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int rc = -1;
    Py_ssize_t size = encoded_size(items, n);
    if (size < 0)
        goto done;
    if (self->count == 0 && HEADER_SIZE + (int64_t)size > MAX_BATCH_SIZE) {
        PyErr_Format(record_too_large_error,
                     "%lld records of %zd bytes cannot fit a record batch (at most %lld bytes)",
                     count, size, (long long)MAX_BATCH_SIZE);
        goto done;
    }
    if (builder_reserve(self, size) == 0)
        rc = copy_encoded(self, items, n, size);
done:
    Py_DECREF(seq);
    return rc;
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
    if (append_encoded_records(self, records, count) < 0)
        return NULL;
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
