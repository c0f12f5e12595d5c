/* kafkaline._record_core: send()'s common case: one record into its partition's open batch.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* new_batch(topic, partition, timestamp_ms, key, value): the future of a record that needs a
 * new batch (see OpenBatchSender), or NULL with its error. A NewBatchStep is called here
 * without making the partition and timestamp ints, and what it declines goes to its fallback
 * (it would decline again). */
static PyObject *
sender_new_batch(OpenBatchSender *self, PyObject *const *args, long long partition,
                 long long timestamp)
{
    PyObject *target = self->new_batch;
    if (Py_IS_TYPE(target, &BatchStepType) && ((BatchStep *)target)->fallback != NULL) {
        BatchStep *step = (BatchStep *)target;
        StepRecord r;
        PyObject *queue = cached_queue(self, args[0], partition, self->cache_count);
        if (queue == NULL && PyErr_Occurred())
            return NULL;
        if (queue != NULL && !step_record(step, args[2], args[1], timestamp, &r)) {
            PyObject *future = batch_step_try(step, queue, &r);
            Py_DECREF(queue);
            if (future != Py_None)
                return future; /* or NULL */
            Py_DECREF(future);
        }
        else {
            Py_XDECREF(queue);
        }
        target = step->fallback;
    }
    PyObject *call[5] = {args[0], args[4], args[5], args[2], args[1]};
    PyObject *partition_obj = NULL, *timestamp_obj = NULL, *result = NULL;
    if (call[1] == Py_None && (call[1] = partition_obj = PyLong_FromLongLong(partition)) == NULL)
        return NULL;
    if (call[2] == Py_None && (call[2] = timestamp_obj = PyLong_FromLongLong(timestamp)) == NULL)
        goto done;
    result = PyObject_Vectorcall(target, call, 5, NULL);
done:
    Py_XDECREF(partition_obj);
    Py_XDECREF(timestamp_obj);
    return result;
}

/* A record send() got in the shape the core takes whole. */
typedef struct {
    PyObject *key, *value;
    Py_ssize_t key_size, value_size; /* -1: null */
    long long timestamp;
} UsualRecord;

/* A keyless record's sticky partitioner and its current choice (NULL for other records), the
 * sticky batch size, and the record's size as the partitioner counts it. */
typedef struct {
    PyObject *partitioner, *sticky;
    Py_ssize_t limit, record_size;
} StickyChoice;

/* send()'s arguments as a UsualRecord: 0, or 1 when the general path must decide. */
static inline int
usual_record(OpenBatchSender *self, PyObject *const *args, UsualRecord *r)
{
    PyObject *topic = args[0], *value = args[1], *key = args[2];
    if (!self->open || args[3] != Py_None || !PyUnicode_CheckExact(topic) ||
        !(value == Py_None || PyBytes_CheckExact(value)) ||
        !(key == Py_None || PyBytes_CheckExact(key)))
        return 1;
    r->key = key;
    r->value = value;
    r->key_size = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
    r->value_size = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
    if ((r->key_size < 0 ? 0 : r->key_size) + (r->value_size < 0 ? 0 : r->value_size) >
        self->payload_limit)
        return 1;
    if (args[5] != Py_None)
        return plain_int(args[5], INT64_MAX, &r->timestamp);
#ifdef CLOCK_REALTIME
    /* time.time_ns() // 1_000_000 reads this clock too */
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0 || now.tv_sec < 0)
        return 1;
    r->timestamp = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    return 0;
#else
    return 1;
#endif
}

/* A keyless record's partition: the sticky partitioner's current one, kept in *s with the
 * partitioner (the choice is checked again under the lock). 0; 1 for the general path; -1 on
 * error. */
static int
sticky_choice(OpenBatchSender *self, PyObject *topic, long long count, const UsualRecord *r,
              StickyChoice *s, long long *partition)
{
    if (self->cache_sticky == NULL) {
        PyObject *by_topic = accumulator_attr(self, str_sticky);
        if (by_topic == NULL)
            return -1;
        PyObject *found = PyDict_Check(by_topic) ? PyDict_GetItemWithError(by_topic, topic) : NULL;
        Py_XSETREF(self->cache_sticky, Py_XNewRef(found));
        Py_DECREF(by_topic);
        if (found == NULL)
            return PyErr_Occurred() ? -1 : 1;
    }
    s->partitioner = Py_NewRef(self->cache_sticky);
    s->sticky = read_slot(s->partitioner, str_current, &self->sticky_current);
    if (s->sticky == NULL)
        return -1;
    if (s->sticky == Py_None)
        return 1;
    Py_ssize_t p;
    int rc = attr_ssize(s->sticky, str_partition, &self->sticky_partition, &p);
    if (rc != 0 || p >= count)
        return rc < 0 ? -1 : 1;
    *partition = p;
    rc = attr_ssize(s->partitioner, str_sticky_batch_size, &self->sticky_size, &s->limit);
    if (rc != 0 || s->limit > PY_SSIZE_T_MAX / 2)
        return rc < 0 ? -1 : 1;
    s->record_size = self->record_overhead + (r->value_size < 0 ? 0 : r->value_size);
    return 0;
}

/* BuiltInPartitioner.switch_due() is false: the partitioner's choice is still this one, and
 * this record leaves it under twice the sticky batch size (the batch stays not full, see
 * append_to_builder). *produced_bytes: what the choice counted so far. */
static inline int
sticky_takes(OpenBatchSender *self, const StickyChoice *s, Py_ssize_t *produced_bytes)
{
    PyObject *current = read_slot(s->partitioner, str_current, &self->sticky_current);
    int rc = current == NULL    ? -1
             : current != s->sticky ? 1
                                    : attr_ssize(s->sticky, str_produced_bytes,
                                                 &self->sticky_produced, produced_bytes);
    Py_XDECREF(current);
    return rc == 0 && *produced_bytes <= PY_SSIZE_T_MAX - s->record_size &&
           *produced_bytes + s->record_size < 2 * s->limit;
}

/* The record into the open batch b if it takes it: 1 (an error may be set then too, when the
 * sticky partitioner's count could not be updated: the record is in, the call fails), else 0
 * (an error may be set). */
static inline int
append_to_builder(OpenBatchSender *self, Builder *b, const UsualRecord *r, const StickyChoice *s)
{
    Py_ssize_t produced_bytes = 0;
    if (s->sticky != NULL && !sticky_takes(self, s, &produced_bytes))
        return 0;
    /* limit - 1: never leaves the batch full, so no wakeup is due (the append that made this
     * batch woke the Sender for any full one before it); nor past the buffer memory the batch
     * holds (append() takes more from the pool). */
    Py_ssize_t bound = b->memory_cap < b->limit ? b->memory_cap : b->limit - 1;
    if (try_append_plain(b, r->timestamp, r->key_size < 0 ? NULL : PyBytes_AS_STRING(r->key),
                         r->key_size, r->value_size < 0 ? NULL : PyBytes_AS_STRING(r->value),
                         r->value_size, bound) != APPENDED)
        return 0;
    if (s->sticky != NULL) {
        /* What update_partition_info() does when no switch is due: count. */
        PyObject *produced = PyLong_FromSsize_t(produced_bytes + s->record_size);
        if (produced != NULL)
            PyObject_SetAttr(s->sticky, str_produced_bytes, produced); /* fails: error set */
        Py_XDECREF(produced);
    }
    return 1;
}

/* The queue's last batch (a new reference), or NULL when it has none or on error (then set).
 * Through the sequence slots themselves: the queue's deque has them, and this runs per send. */
static inline PyObject *
last_batch(PyObject *batches)
{
    PySequenceMethods *seq = Py_TYPE(batches)->tp_as_sequence;
    if (seq == NULL || seq->sq_length == NULL || seq->sq_item == NULL) {
        Py_ssize_t n = PyObject_Length(batches);
        return n > 0 ? PySequence_GetItem(batches, n - 1) : NULL;
    }
    Py_ssize_t n = seq->sq_length(batches);
    return n > 0 ? seq->sq_item(batches, n - 1) : NULL;
}

/* Under the partition's lock, as the general path appends (nothing here runs Python code that
 * could let another thread in: the attributes read are plain ones): the record into the last
 * batch if it takes it, and then *batch_result is that batch's result and *offset_delta the
 * record's; else *no_room says whether no batch there could take it whatever memory it held.
 * 0 when no error can be set, 1 when the caller must check, once the lock is released. */
static int
append_locked(OpenBatchSender *self, PyObject *batches, const UsualRecord *r, const StickyChoice *s,
              PyObject **batch_result, long long *offset_delta, int *no_room)
{
    PyObject *batch = last_batch(batches);
    PyObject *builder = batch ? read_slot(batch, str_builder, &self->batch_builder) : NULL;
    int check = 1;
    *no_room = batch == NULL && s->sticky == NULL;
    if (builder != NULL && Py_IS_TYPE(builder, &BuilderType)) {
        Builder *b = (Builder *)builder;
        if (b->closed) {
            *no_room = s->sticky == NULL;
        }
        else if (append_to_builder(self, b, r, s)) {
            if (s->sticky == NULL || !PyErr_Occurred()) {
                *offset_delta = b->count - 1;
                *batch_result = read_slot(batch, str_result, &self->batch_result);
                check = *batch_result == NULL || s->sticky != NULL;
            }
        }
        else if (s->sticky == NULL && !PyErr_Occurred()) {
            *no_room = builder_has_no_room(b, r->timestamp, r->key_size, r->value_size);
        }
    }
    Py_XDECREF(builder);
    Py_XDECREF(batch);
    return check;
}

/* Release the lock, keeping an error set before across the release (`check`: one may be):
 * -1 if one is set after. */
static int
unlock_keeping_error(OpenBatchSender *self, PyObject *lock, int check)
{
    PyObject *exc_type = NULL, *exc_value = NULL, *exc_tb = NULL;
    if (check && PyErr_Occurred())
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    if (call_lock(self, lock, 0) < 0) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        return -1;
    }
    if (exc_type == NULL)
        return 0;
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return -1;
}

/* The record into the queue's open batch: its future; else the new-batch step's answer when
 * no batch there could take it, or None. NULL on error. */
static PyObject *
append_to_queue(OpenBatchSender *self, PyObject *const *args, PyObject *queue, const UsualRecord *r,
                const StickyChoice *s, long long partition)
{
    PyObject *lock = read_slot(queue, str_lock, &self->queue_lock);
    if (lock == NULL)
        return NULL;
    PyObject *result = NULL, *batch_result = NULL;
    PyObject *batches = read_slot(queue, str_batches, &self->queue_batches);
    if (batches == NULL || call_lock(self, lock, 1) < 0)
        goto done;
    long long offset_delta = -1;
    int no_room = 0;
    int check = append_locked(self, batches, r, s, &batch_result, &offset_delta, &no_room);
    if (unlock_keeping_error(self, lock, check) < 0)
        goto done;
    if (batch_result != NULL)
        result = future_make(self->future_type, batch_result, offset_delta, r->key_size,
                             r->value_size, r->timestamp);
    else if (no_room && self->new_batch != NULL)
        result = sender_new_batch(self, args, partition, r->timestamp);
    else if (!no_room && s->sticky == NULL)
        result = sender_grow(self, args, queue, r->timestamp); /* short of memory only */
    else
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(batch_result);
    Py_XDECREF(batches);
    Py_DECREF(lock);
    return result;
}

/* The record into its partition's open batch: its future, or None with nothing done. */
static PyObject *
sender_try(OpenBatchSender *self, PyObject *const *args)
{
    UsualRecord r;
    if (usual_record(self, args, &r))
        Py_RETURN_NONE;
    PyObject *topic = args[0];
    topic_cache_select(self, topic);
    long long count = cached_count(self, topic);
    if (count <= 0) {
        if (count < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    /* The partition, or for a keyless record the sticky partitioner's (checked under the lock). */
    long long partition = -1;
    if (args[4] != Py_None) {
        if (plain_int(args[4], count - 1, &partition))
            Py_RETURN_NONE;
    }
    else if (r.key != Py_None) {
        const unsigned char *key = (const unsigned char *)PyBytes_AS_STRING(r.key);
        uint32_t h = (uint32_t)murmur2(key, r.key_size);
        partition = (long long)((h & 0x7fffffffu) % (uint64_t)count);
    }
    StickyChoice s = {NULL, NULL, 0, 0};
    PyObject *result = NULL, *queue = NULL;
    int rc = partition < 0 ? sticky_choice(self, topic, count, &r, &s, &partition) : 0;
    if (rc == 0) {
        queue = cached_queue(self, topic, partition, count);
        rc = queue != NULL ? 0 : PyErr_Occurred() ? -1 : 1;
    }
    if (rc == 0)
        result = append_to_queue(self, args, queue, &r, &s, partition);
    else if (rc > 0)
        result = Py_NewRef(Py_None);
    Py_XDECREF(queue);
    Py_XDECREF(s.sticky);
    Py_XDECREF(s.partitioner);
    return result;
}

static PyObject *str_send_args[6];

/* Puts the keyword arguments of a send() call into `a` (send()'s six, in order): 1, or 0
 * when the call is not one sender_try() reads (an unknown or repeated name, or one given by
 * position too), or -1 with an error set. */
static inline int
sender_keywords(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **a)
{
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
            return -1;
        if (j == 6 || j < nargs || (seen & (1u << j)))
            return 0;
        seen |= 1u << j;
        a[j] = args[nargs + k];
    }
    return 1;
}

/* sender(topic, value=None, key=None, headers=None, partition=None, timestamp_ms=None):
 * send()'s signature. What sender_try() declines, and any call it cannot read (a missing
 * topic, an unknown keyword), goes to the fallback with the arguments as given: the general
 * path, which raises the TypeError Python would. Without a fallback, None. */
static PyObject *
OpenBatchSender_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames)
{
    OpenBatchSender *self = (OpenBatchSender *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *a[6] = {NULL, Py_None, Py_None, Py_None, Py_None, Py_None};
    switch (nargs) { /* unrolled: a loop's bookkeeping cost more than the copies */
    case 6:
        a[5] = args[5];
        /* fall through */
    case 5:
        a[4] = args[4];
        /* fall through */
    case 4:
        a[3] = args[3];
        /* fall through */
    case 3:
        a[2] = args[2];
        /* fall through */
    case 2:
        a[1] = args[1];
        /* fall through */
    case 1:
        a[0] = args[0];
        /* fall through */
    case 0:
        break;
    default:
        goto general;
    }
    if (kwnames != NULL) {
        int rc = sender_keywords(args, nargs, kwnames, a);
        if (rc < 0)
            return NULL;
        if (rc == 0)
            goto general;
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
OpenBatchSender_fallback_attr(OpenBatchSender *self, void *name)
{
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_AttributeError, (const char *)name);
        return NULL;
    }
    return PyObject_GetAttrString(self->fallback, (const char *)name);
}

static PyObject *
OpenBatchSender_get_fallback(OpenBatchSender *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->fallback == NULL ? Py_None : self->fallback);
}

static PyObject *
OpenBatchSender_get_new_batch(OpenBatchSender *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->new_batch == NULL ? Py_None : self->new_batch);
}

static int
OpenBatchSender_set_new_batch(OpenBatchSender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value != NULL && value != Py_None && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "new_batch must be callable or None");
        return -1;
    }
    Py_XSETREF(self->new_batch, value == Py_None ? NULL : Py_XNewRef(value));
    return 0;
}

static int
OpenBatchSender_set_fallback(OpenBatchSender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value != NULL && value != Py_None && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable or None");
        return -1;
    }
    Py_XSETREF(self->fallback, value == Py_None ? NULL : Py_XNewRef(value));
    return 0;
}

static PyGetSetDef OpenBatchSender_getset[] = {
    {"fallback", (getter)OpenBatchSender_get_fallback, (setter)OpenBatchSender_set_fallback,
     "What a call the core declines goes to (send()'s general path), or None.", NULL},
    {"__wrapped__", (getter)OpenBatchSender_get_fallback, NULL, "The fallback.", NULL},
    {"new_batch", (getter)OpenBatchSender_get_new_batch, (setter)OpenBatchSender_set_new_batch,
     "new_batch(topic, partition, timestamp_ms, key, value): the future of a record that needs "
     "a new batch, or None (it then goes to the fallback).", NULL},
    {"__doc__", (getter)OpenBatchSender_fallback_attr, NULL, NULL, "__doc__"},
    {"__name__", (getter)OpenBatchSender_fallback_attr, NULL, NULL, "__name__"},
    {"__qualname__", (getter)OpenBatchSender_fallback_attr, NULL, NULL, "__qualname__"},
    {"open", (getter)OpenBatchSender_get_open, (setter)OpenBatchSender_set_open,
     "Whether send() may go straight on (the producer's gate is open).", NULL},
    {"partition_counts", (getter)OpenBatchSender_get_counts, (setter)OpenBatchSender_set_counts,
     "The producer's topic -> partition count map.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject OpenBatchSenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.OpenBatchSender",
    .tp_doc = "sender(topic, value, key, headers, partition, timestamp_ms): Producer.send()'s "
              "common case into the partition's open batch; its future, or None when nothing "
              "was done.",
    .tp_basicsize = sizeof(OpenBatchSender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(OpenBatchSender, vectorcall),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)OpenBatchSender_init,
    .tp_dealloc = (destructor)OpenBatchSender_dealloc,
    .tp_traverse = (traverseproc)OpenBatchSender_traverse,
    .tp_clear = (inquiry)OpenBatchSender_clear,
    .tp_call = PyVectorcall_Call,
    .tp_getset = OpenBatchSender_getset,
};
