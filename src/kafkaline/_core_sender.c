/* kafkaline._record_core: send()'s common case: the sender's state.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

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
 * One case goes on in Python instead: a record with its partition chosen here (given, or its
 * key's) whose partition has a queue but no batch that could take it, whatever memory it
 * held (none, or the last one closed or past its limit). It needs a new batch, so it goes to
 * `new_batch(topic, partition, timestamp_ms, key, value)` (the producer's step into
 * RecordAccumulator.append_to_new_batch()), which returns its future: the general path's
 * checks and partitioner are done, its append protocol starts at its memory step.
 *
 * The partition is what the general path chooses: the one given, murmur2 of the key (as
 * Java), or the topic's current sticky partition (KIP-794) for a record without key. The
 * accumulator's state is read where it keeps it (its copy-on-write map of queues, each
 * queue's lock and batches, the sticky partitioners), under the same lock the general path
 * takes, so the order of records within a partition is the order of the appends.
 *
 * The producer makes one only when nothing else must see each record (no interceptors,
 * serializers, custom partitioner or transactions), sets `open` while its gate is open, and
 * `partition_counts` to its map of topic -> partition count whenever it replaces that map;
 * in between it only adds topics to the map, never changes or removes one (a topic's count
 * is kept per map, see topic_cache_select()). */
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
    PyObject *new_batch; /* the step for a record whose open batch has no room, or NULL */
    PyObject *accumulator_dict; /* its instance dict, once read */
    /* What sends to cache_topic found, see topic_cache_select(): its partition count (-1:
     * not read from the current partition_counts), its sticky partitioner and its queues by
     * partition (NULL: not found yet). */
    PyObject *cache_topic, *cache_sticky, **cache_queue;
    long long cache_count;
    Py_ssize_t cache_size;
} OpenBatchSender;

static PyObject *OpenBatchSender_vectorcall(PyObject *callable, PyObject *const *args,
                                            size_t nargsf, PyObject *kwnames);
static int OpenBatchSender_set_fallback(OpenBatchSender *self, PyObject *value, void *Py_UNUSED(c));
static void topic_cache_clear(OpenBatchSender *self);

static PyObject *str_queues, *str_lock, *str_batches, *str_builder, *str_result, *str_sticky;
static PyObject *str_current, *str_partition, *str_produced_bytes, *str_sticky_batch_size;

static int
OpenBatchSender_init(OpenBatchSender *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"accumulator", "future_type", "payload_limit", "record_overhead",
                             "fallback", NULL};
    PyObject *accumulator, *future_type, *fallback = Py_None;
    Py_ssize_t payload_limit, record_overhead;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!nn|O:OpenBatchSender", kwlist, &accumulator,
                                     &PyType_Type, &future_type, &payload_limit,
                                     &record_overhead, &fallback))
        return -1;
    if (OpenBatchSender_set_fallback(self, fallback, NULL) < 0)
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
    self->cache_count = -1;
    self->vectorcall = OpenBatchSender_vectorcall;
    return 0;
}

static int
OpenBatchSender_traverse(OpenBatchSender *self, visitproc visit, void *arg)
{
    Py_VISIT(self->accumulator);
    Py_VISIT(self->future_type);
    Py_VISIT(self->partition_counts);
    Py_VISIT(self->lock_type);
    Py_VISIT(self->lock_acquire);
    Py_VISIT(self->lock_release);
    Py_VISIT(self->fallback);
    Py_VISIT(self->new_batch);
    Py_VISIT(self->accumulator_dict);
    Py_VISIT(self->cache_topic);
    Py_VISIT(self->cache_sticky);
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
OpenBatchSender_clear(OpenBatchSender *self)
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
    Py_CLEAR(self->new_batch);
    Py_CLEAR(self->accumulator_dict);
    topic_cache_clear(self);
    return 0;
}

static void
OpenBatchSender_dealloc(OpenBatchSender *self)
{
    PyObject_GC_UnTrack(self);
    OpenBatchSender_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
OpenBatchSender_get_open(OpenBatchSender *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->open);
}

static int
OpenBatchSender_set_open(OpenBatchSender *self, PyObject *value, void *Py_UNUSED(c))
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
OpenBatchSender_get_counts(OpenBatchSender *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->partition_counts);
}

static int
OpenBatchSender_set_counts(OpenBatchSender *self, PyObject *value, void *Py_UNUSED(c))
{
    if (value == NULL || !PyDict_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "partition_counts must be a dict");
        return -1;
    }
    Py_SETREF(self->partition_counts, Py_NewRef(value));
    self->cache_count = -1; /* read again from the new map */
    return 0;
}
