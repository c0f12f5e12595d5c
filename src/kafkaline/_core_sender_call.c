/* kafkaline._record_core: send()'s common case: one record into its partition's open batch.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

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

/* new_batch(topic, partition, timestamp_ms, key, value): the future of a record that needs a
 * new batch (see OpenBatchSender), or NULL with its error. */
static PyObject *
sender_new_batch(Sender *self, PyObject *const *args, long long partition, long long timestamp)
{
    PyObject *call[5] = {args[0], args[4], args[5], args[2], args[1]};
    PyObject *partition_obj = NULL, *timestamp_obj = NULL, *result = NULL;
    if (call[1] == Py_None && (call[1] = partition_obj = PyLong_FromLongLong(partition)) == NULL)
        return NULL;
    if (call[2] == Py_None && (call[2] = timestamp_obj = PyLong_FromLongLong(timestamp)) == NULL)
        goto done;
    result = PyObject_Vectorcall(self->new_batch, call, 5, NULL);
done:
    Py_XDECREF(partition_obj);
    Py_XDECREF(timestamp_obj);
    return result;
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
    int appended = 0, no_room = n == 0 && sticky == NULL;
    if (builder != NULL && Py_IS_TYPE(builder, &BuilderType) && ((Builder *)builder)->closed)
        no_room = sticky == NULL;
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
        else if (sticky == NULL && !PyErr_Occurred()) {
            no_room = builder_has_no_room(b, timestamp, key_size, value_size);
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
    if (batch_result == NULL) {
        if (no_room && self->new_batch != NULL)
            result = sender_new_batch(self, args, partition, timestamp);
        else
            result = Py_NewRef(Py_None);
        goto done;
    }
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

static PyObject *
Sender_get_new_batch(Sender *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->new_batch == NULL ? Py_None : self->new_batch);
}

static int
Sender_set_new_batch(Sender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value != NULL && value != Py_None && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "new_batch must be callable or None");
        return -1;
    }
    Py_XSETREF(self->new_batch, value == Py_None ? NULL : Py_XNewRef(value));
    return 0;
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
    {"new_batch", (getter)Sender_get_new_batch, (setter)Sender_set_new_batch,
     "new_batch(topic, partition, timestamp_ms, key, value): the future of a record that needs "
     "a new batch, or None (it then goes to the fallback).", NULL},
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
