/* kafkaline._record_core: send()'s new-batch step in its common case.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ---------------------------------------------------------------- NewBatchStep */

/* step(topic, partition, timestamp_ms, key, value): OpenBatchSender's new_batch for a
 * producer whose batches are not transactional (plain or compressed). A record the
 * sender checked and placed, whose partition's queue has no batch that could take it, goes
 * into a new batch made here, as the accumulator's append protocol would make it, when that
 * protocol would take nothing but this path: under the queue's lock, the accumulator not
 * closed, the queue's last batch (if any) full or taking nothing whatever memory it held
 * without asking the pool for more, and the pool giving the new batch's first memory at
 * once (try_allocate(): free now, nobody waiting). Then the batch holds that memory, takes
 * the record, is queued and counted incomplete, and the Sender is woken (as for every new
 * batch). Anything else goes to `fallback` (Producer._send_to_new_batch, the Python
 * protocol, the reference) with nothing done. A compressed batch's builder and first memory
 * take the topic's estimated compression ratio, read once per batch (the protocol reads it
 * for each: the Sender may change it between the two, and either answer is one it gives). */
/* ProducerBatch's __slots__, all of them: a batch made here sets each. */
#define BATCH_SLOT_COUNT 13
static const char *const BATCH_SLOTS[BATCH_SLOT_COUNT] = {
    "attempts",          "builder",        "compression_level", "created_ms",      "drained_ms",
    "held_by_appenders", "is_split_batch", "is_transactional",  "last_attempt_ms", "pooled_bytes",
    "result",            "retry_backoff_ms", "topic_partition"};

static PyTypeObject BatchResultType;
static PyObject *batch_result_make(PyTypeObject *type, PyObject *topic, PyObject *partition);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *accumulator_dict; /* the accumulator's instance dict: _closed, _queues */
    PyObject *pool;             /* its BufferPool */
    PyObject *incomplete;       /* its set of incomplete batches */
    PyObject *incomplete_lock;  /* a QueueLock guarding that set */
    PyObject *batch_type;       /* ProducerBatch */
    PyTypeObject *future_type;
    PyObject *fallback, *wakeup;
    PyObject *batch_size_obj, *zero, *zero_float;
    /* Compressed batches: the codec (a CompressionType member), its level and the
     * estimator's estimate(topic); compression_id 0 for plain batches, -1 when the codec or
     * level was refused at init (the protocol then decides, and raises, for every batch). */
    PyObject *compression, *level, *estimate, *batch_kwnames;
    long compression_id;
    PyTypeObject *result_type; /* ProduceRequestResult */
    Py_ssize_t batch_size, first_memory, total_memory, record_overhead;
    int batch_direct; /* made here rather than called (see step_make_batch()) */
    Py_ssize_t batch_slots[BATCH_SLOT_COUNT];
    SlotCache queue_lock, queue_batches, queue_tp, batch_builder, batch_result, batch_pooled,
        batch_split;
} BatchStep;

static PyTypeObject BatchStepType;
static PyObject *str_closed, *str_try_allocate, *str_deallocate, *str_append, *str_tp,
    *str_pooled_bytes, *str_is_split_batch, *str_total_memory;

/* A record's sizes as the step takes them: key and value bytes or None (-1). */
typedef struct {
    PyObject *key, *value;
    Py_ssize_t key_size, value_size, bound; /* bound: record_size_bound() */
    long long timestamp;
} StepRecord;

static PyObject *
step_call_method(PyObject *obj, PyObject *name, Py_ssize_t n)
{
    PyObject *arg = PyLong_FromSsize_t(n);
    if (arg == NULL)
        return NULL;
    PyObject *args[2] = {obj, arg};
    PyObject *r = PyObject_VectorcallMethod(name, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(arg);
    return r;
}

/* AppendSide._first_reservation() for one record, with the topic's ratio estimate. */
static inline Py_ssize_t
step_first_reservation(const BatchStep *st, const StepRecord *r, double ratio)
{
    Py_ssize_t size_bound = HEADER_SIZE + r->bound;
    if (size_bound <= st->first_memory)
        return st->first_memory;
    Py_ssize_t limit = st->batch_size;
    if (st->compression_id != 0)
        limit = HEADER_SIZE + records_room(st->batch_size, ratio);
    if (limit > st->total_memory)
        return size_bound;
    return limit > size_bound ? limit : size_bound;
}

/* The estimated compression ratio of the queue's topic for a compressed batch (1.0 for a
 * plain one) in *ratio: 0; 1 when the estimate is not a float in (0, 1] (the protocol
 * decides); -1 on error. */
static int
step_ratio(BatchStep *st, PyObject *queue, double *ratio)
{
    *ratio = 1.0;
    if (st->compression_id == 0)
        return 0;
    PyObject *tp = read_slot(queue, str_tp, &st->queue_tp);
    if (tp == NULL)
        return -1;
    if (!PyTuple_Check(tp) || PyTuple_GET_SIZE(tp) != 2) {
        Py_DECREF(tp);
        return 1; /* not a TopicPartition */
    }
    PyObject *estimate = PyObject_CallOneArg(st->estimate, PyTuple_GET_ITEM(tp, 0));
    Py_DECREF(tp);
    if (estimate == NULL)
        return -1;
    int rc = 1;
    if (PyFloat_CheckExact(estimate)) {
        *ratio = PyFloat_AS_DOUBLE(estimate);
        rc = *ratio > 0.0 && *ratio <= 1.0 ? 0 : 1;
    }
    Py_DECREF(estimate);
    return rc;
}

/* ProducerBatch's builder for a new batch: RecordBatchBuilder(limit, compression=...,
 * compression_level=..., estimated_compression_ratio=ratio), made without a call. The codec
 * and level were checked at init, as the builder's own call checks them. */
static PyObject *
step_make_builder(const BatchStep *st, Py_ssize_t limit, double ratio)
{
    if (st->compression_id == 0)
        return builder_make_plain(limit);
    if (ensure_python_side() < 0)
        return NULL;
    BuilderArgs a = {.size_limit = limit, .level = Py_None, .log_append_time = Py_None,
                     .ratio = ratio};
    Builder *self = (Builder *)BuilderType.tp_alloc(&BuilderType, 0);
    if (self == NULL || builder_setup(self, &a) < 0) {
        Py_XDECREF(self);
        return NULL;
    }
    Py_SETREF(self->compression, Py_NewRef(st->compression));
    Py_SETREF(self->compression_level, Py_NewRef(st->level));
    self->compression_id = st->compression_id;
    self->attributes = (int16_t)(self->attributes | st->compression_id);
    return (PyObject *)self;
}

/* ProducerBatch(tp, now, batch_size, ...) called, as AppendSide._new_batch calls it. */
static PyObject *
step_call_batch_type(BatchStep *st, PyObject *tp, PyObject *now, double ratio)
{
    if (st->compression_id == 0) {
        PyObject *args[3] = {tp, now, st->batch_size_obj};
        return PyObject_Vectorcall(st->batch_type, args, 3, NULL);
    }
    PyObject *ratio_obj = PyFloat_FromDouble(ratio);
    if (ratio_obj == NULL)
        return NULL;
    PyObject *args[6] = {tp, now, st->batch_size_obj, st->compression, st->level, ratio_obj};
    PyObject *batch = PyObject_Vectorcall(st->batch_type, args, 3, st->batch_kwnames);
    Py_DECREF(ratio_obj);
    return batch;
}

/* Whether the protocol's second step would pass over the queue's last batch to a new one
 * without taking memory for it: no last batch, a full one, or one that refuses the record
 * while needing no more memory for it (AppendSide._try_last()), whose builder is then in
 * *refusing (to be closed, as its refusing append() would close it). 1 yes, 0 no, -1 error. */
static int
step_last_batch_passed(BatchStep *st, PyObject *batches, const StepRecord *r,
                       PyObject **refusing)
{
    Py_ssize_t n = PyObject_Length(batches);
    if (n <= 0)
        return n < 0 ? -1 : 1;
    PyObject *batch = PySequence_GetItem(batches, n - 1);
    if (batch == NULL)
        return -1;
    int rc = 0;
    PyObject *builder = read_slot(batch, str_builder, &st->batch_builder);
    if (builder == NULL || !Py_IS_TYPE(builder, &BuilderType)) {
        rc = builder == NULL ? -1 : 0;
        goto done;
    }
    Builder *b = (Builder *)builder;
    if (b->closed || (b->count && b->used >= b->limit)) {
        rc = 1; /* is_full: not tried */
        goto done;
    }
    if (!builder_has_no_room(b, r->timestamp, r->key_size, r->value_size))
        goto done;
    PyObject *split = read_slot(batch, str_is_split_batch, &st->batch_split);
    Py_ssize_t held = 0;
    if (split == NULL)
        rc = -1;
    else if (split != Py_False)
        rc = 1; /* outside the pool: _memory_needed() is 0 */
    else if ((rc = attr_ssize(batch, str_pooled_bytes, &st->batch_pooled, &held)) == 0) {
        Py_ssize_t need = b->used + r->bound < b->limit ? b->used + r->bound : b->limit;
        rc = held >= b->limit || need <= held; /* _memory_needed() is 0 */
    }
    else if (rc > 0) {
        rc = 0; /* not a plain int: the protocol decides */
    }
    Py_XDECREF(split);
    if (rc == 1)
        *refusing = Py_NewRef(builder);
done:
    Py_XDECREF(builder);
    Py_DECREF(batch);
    return rc;
}

static inline double
step_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* time.monotonic()'s clock */
    return (double)now.tv_sec * 1000.0 + (double)now.tv_nsec / 1e6;
}

/* ProducerBatch(tp, now, batch_size, ...), holding `memory` bytes (hold_memory()): called,
 * or with the layout checked at init (step_batch_layout()) made here with the fields its
 * __init__ gives the batch, which costs a small part of the call. */
static PyObject *
step_make_batch(BatchStep *st, PyObject *tp, PyObject *now, Py_ssize_t memory, double ratio)
{
    PyObject *pooled = PyLong_FromSsize_t(memory);
    if (pooled == NULL)
        return NULL;
    PyObject *batch = NULL, *builder = NULL, *result = NULL;
    if (!st->batch_direct || !PyTuple_Check(tp) || PyTuple_GET_SIZE(tp) != 2) {
        batch = step_call_batch_type(st, tp, now, ratio);
        if (batch != NULL && PyObject_SetAttr(batch, str_pooled_bytes, pooled) < 0)
            Py_CLEAR(batch);
        goto done;
    }
    PyTypeObject *type = (PyTypeObject *)st->batch_type;
    Py_ssize_t limit = st->batch_size > HEADER_SIZE ? st->batch_size : HEADER_SIZE + 1;
    if ((builder = step_make_builder(st, limit, ratio)) == NULL ||
        (result = batch_result_make(st->result_type, PyTuple_GET_ITEM(tp, 0),
                                    PyTuple_GET_ITEM(tp, 1))) == NULL ||
        (batch = type->tp_alloc(type, 0)) == NULL)
        goto done;
    /* In the order of BATCH_SLOTS. */
    PyObject *values[BATCH_SLOT_COUNT] = {st->zero,   builder,   st->level, now,  now,
                                          st->zero,   Py_False,  Py_False, now,   pooled,
                                          result,     st->zero_float,      tp};
    for (int i = 0; i < BATCH_SLOT_COUNT; i++)
        *(PyObject **)((char *)batch + st->batch_slots[i]) = Py_NewRef(values[i]);
done:
    Py_XDECREF(builder);
    Py_XDECREF(result);
    Py_DECREF(pooled);
    return batch;
}

/* A new batch for the queue's partition holding `memory` bytes, with the record in it: the
 * record's future, and the batch in *made; NULL on error. */
static PyObject *
step_filled_batch(BatchStep *st, PyObject *queue, const StepRecord *r, Py_ssize_t memory,
                  double ratio, PyObject **made)
{
    PyObject *tp = read_slot(queue, str_tp, &st->queue_tp);
    if (tp == NULL)
        return NULL;
    PyObject *now = PyFloat_FromDouble(step_now_ms());
    PyObject *batch = NULL, *builder = NULL, *result = NULL, *future = NULL;
    if (now != NULL) {
        batch = step_make_batch(st, tp, now, memory, ratio);
        Py_DECREF(now);
    }
    Py_DECREF(tp);
    if (batch == NULL || (builder = read_slot(batch, str_builder, &st->batch_builder)) == NULL)
        goto done;
    if (!Py_IS_TYPE(builder, &BuilderType)) {
        PyErr_SetString(PyExc_TypeError, "a new batch's builder is not the compiled one");
        goto done;
    }
    Builder *b = (Builder *)builder;
    b->memory_cap = memory;
    int rc = try_append(b, r->timestamp, r->key_size < 0 ? NULL : PyBytes_AS_STRING(r->key),
                        r->key_size, r->value_size < 0 ? NULL : PyBytes_AS_STRING(r->value),
                        r->value_size, NULL, 0, b->limit);
    if (rc != APPENDED) {
        if (!PyErr_Occurred())
            PyErr_SetString(illegal_state_error, "a record did not fit an empty batch");
        goto done;
    }
    if ((result = read_slot(batch, str_result, &st->batch_result)) != NULL)
        future = future_make(st->future_type, result, b->count - 1, r->key_size, r->value_size,
                             r->timestamp);
done:
    Py_XDECREF(result);
    Py_XDECREF(builder);
    if (future != NULL)
        *made = batch;
    else
        Py_XDECREF(batch);
    return future;
}

/* Queue the batch and count it incomplete, as the protocol's second step does: 0; -1 when
 * it was not queued; -2 when it was queued but not counted (an error is set). */
static int
step_queue_batch(BatchStep *st, PyObject *batches, PyObject *batch)
{
    PyObject *args[2] = {batches, batch};
    PyObject *done = PyObject_VectorcallMethod(str_append, args,
                                               2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    QueueLock *lock = (QueueLock *)st->incomplete_lock;
    if (queue_lock_take(lock, -1) < 0)
        return -2;
    int rc = PySet_Add(st->incomplete, batch);
    queue_lock_give(lock);
    return rc < 0 ? -2 : 0;
}

static PyObject *step_memory_and_batch(BatchStep *st, PyObject *queue, PyObject *batches,
                                       const StepRecord *r);

/* Under the queue's lock: the record's future in a new queued batch; None when the protocol
 * must decide (nothing done); NULL on error. */
static PyObject *
step_locked(BatchStep *st, PyObject *queue, PyObject *batches, const StepRecord *r)
{
    PyObject *closed = PyDict_GetItemWithError(st->accumulator_dict, str_closed);
    if (closed != Py_False)
        return closed == NULL && PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *refusing = NULL;
    int passed = step_last_batch_passed(st, batches, r, &refusing);
    if (passed <= 0)
        return passed < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *future = step_memory_and_batch(st, queue, batches, r);
    if (future != NULL && future != Py_None && refusing != NULL)
        ((Builder *)refusing)->closed = 1; /* only once memory was had, as in the protocol */
    Py_XDECREF(refusing);
    return future;
}

/* step_locked() once the last batch is passed over: memory, then the batch. */
static PyObject *
step_memory_and_batch(BatchStep *st, PyObject *queue, PyObject *batches, const StepRecord *r)
{
    double ratio;
    int declined = step_ratio(st, queue, &ratio);
    if (declined)
        return declined < 0 ? NULL : Py_NewRef(Py_None);
    Py_ssize_t memory = step_first_reservation(st, r, ratio);
    int taken_now = PyObject_TypeCheck(st->pool, &PoolStateType)
                        ? pool_take_now((PoolState *)st->pool, memory)
                        : 0;
    if (taken_now < 0)
        return NULL;
    if (!taken_now) {
        PyObject *taken = step_call_method(st->pool, str_try_allocate, memory);
        if (taken != Py_True)
            return taken == NULL ? NULL : (Py_DECREF(taken), Py_NewRef(Py_None));
        Py_DECREF(taken);
    }
    PyObject *batch = NULL;
    PyObject *future = step_filled_batch(st, queue, r, memory, ratio, &batch);
    int queued = future == NULL ? -1 : step_queue_batch(st, batches, batch);
    if (queued < 0)
        Py_CLEAR(future);
    if (queued == -1) { /* the memory is nobody's: back to the pool */
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyObject *given = step_call_method(st->pool, str_deallocate, memory);
        Py_XDECREF(given);
        PyErr_Restore(exc_type, exc_value, exc_tb);
    }
    Py_XDECREF(batch);
    return future;
}

/* What the step does under a queue's lock: the record's future, None (nothing done) or NULL;
 * *wake when the Sender is to be woken once the lock is released. */
typedef PyObject *(*LockedStep)(BatchStep *st, PyObject *queue, PyObject *batches,
                                const StepRecord *r, int *wake);

/* `locked` under the queue's lock (a QueueLock; any other lock: None, nothing done), then
 * the Sender woken if it asked: its future, None or NULL. */
static PyObject *
step_under_queue_lock(BatchStep *st, PyObject *queue, const StepRecord *r, LockedStep locked)
{
    PyObject *lock = read_slot(queue, str_lock, &st->queue_lock);
    if (lock == NULL)
        return NULL;
    PyObject *future = NULL;
    PyObject *batches = read_slot(queue, str_batches, &st->queue_batches);
    int wake = 0;
    if (batches == NULL)
        goto done;
    if (!Py_IS_TYPE(lock, &QueueLockType)) {
        future = Py_NewRef(Py_None);
        goto done;
    }
    if (queue_lock_take((QueueLock *)lock, -1) < 0)
        goto done;
    future = locked(st, queue, batches, r, &wake);
    queue_lock_give((QueueLock *)lock);
    if (future != NULL && future != Py_None && wake) {
        PyObject *woken = PyObject_CallNoArgs(st->wakeup);
        if (woken == NULL)
            Py_CLEAR(future);
        Py_XDECREF(woken);
    }
done:
    Py_XDECREF(batches);
    Py_DECREF(lock);
    return future;
}

/* step_locked() as a LockedStep: a new batch always wakes the Sender. */
static PyObject *
new_batch_locked(BatchStep *st, PyObject *queue, PyObject *batches, const StepRecord *r,
                 int *wake)
{
    *wake = 1;
    return step_locked(st, queue, batches, r);
}

/* The record into a new batch of the queue: its future, None when the protocol must decide
 * (nothing done), NULL on error. The Sender is woken once the queue's lock is released. */
static PyObject *
batch_step_try(BatchStep *st, PyObject *queue, const StepRecord *r)
{
    if (st->compression_id < 0)
        return Py_NewRef(Py_None);
    return step_under_queue_lock(st, queue, r, new_batch_locked);
}

/* The record's sizes, if key and value are bytes or None: 0, else 1. */
static int
step_record(BatchStep *st, PyObject *key, PyObject *value, long long timestamp, StepRecord *r)
{
    if (!(key == Py_None || PyBytes_CheckExact(key)) ||
        !(value == Py_None || PyBytes_CheckExact(value)))
        return 1;
    r->key = key;
    r->value = value;
    r->key_size = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
    r->value_size = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
    r->bound = st->record_overhead + (r->key_size < 0 ? 0 : r->key_size) +
               (r->value_size < 0 ? 0 : r->value_size);
    r->timestamp = timestamp;
    return 0;
}

/* The partition's queue, found as the accumulator keeps it; NULL (no error) when not made. */
static PyObject *
step_queue(BatchStep *st, PyObject *topic, PyObject *partition)
{
    PyObject *queues = PyDict_GetItemWithError(st->accumulator_dict, str_queues);
    PyObject *by_partition =
        queues != NULL && PyDict_Check(queues) ? PyDict_GetItemWithError(queues, topic) : NULL;
    PyObject *queue = by_partition != NULL && PyDict_Check(by_partition)
                          ? PyDict_GetItemWithError(by_partition, partition)
                          : NULL;
    return Py_XNewRef(queue);
}

/* step(topic, partition, timestamp_ms, key, value), as Producer._send_to_new_batch. */
static PyObject *
BatchStep_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    BatchStep *st = (BatchStep *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    long long partition, timestamp;
    StepRecord r;
    if (kwnames == NULL && nargs == 5 && PyUnicode_CheckExact(args[0]) &&
        !plain_int(args[1], INT32_MAX, &partition) && !plain_int(args[2], INT64_MAX, &timestamp) &&
        !step_record(st, args[3], args[4], timestamp, &r)) {
        PyObject *queue = step_queue(st, args[0], args[1]);
        if (queue == NULL && PyErr_Occurred())
            return NULL;
        PyObject *future = queue == NULL ? Py_NewRef(Py_None) : batch_step_try(st, queue, &r);
        Py_XDECREF(queue);
        if (future != Py_None)
            return future; /* or NULL */
        Py_DECREF(future);
    }
    return PyObject_Vectorcall(st->fallback, args, nargsf, kwnames);
}

/* Whether batch_type is a class of exactly BATCH_SLOTS (no other base, slot or __dict__)
 * and result_type a BatchResult: then step_make_batch() fills a new batch's slots (their
 * offsets in batch_slots). */
static int
step_batch_layout(BatchStep *st)
{
    PyTypeObject *type = (PyTypeObject *)st->batch_type;
    if (!PyType_Check(st->batch_type) || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        type->tp_base != &PyBaseObject_Type || type->tp_dictoffset != 0 ||
        type->tp_weaklistoffset != 0 || type->tp_new != PyBaseObject_Type.tp_new ||
        type->tp_basicsize !=
            (Py_ssize_t)(sizeof(PyObject) + BATCH_SLOT_COUNT * sizeof(PyObject *)) ||
        !PyType_IsSubtype(st->result_type, &BatchResultType))
        return 0;
    for (int i = 0; i < BATCH_SLOT_COUNT; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, BATCH_SLOTS[i]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX)
            return 0;
        st->batch_slots[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    return 1;
}

/* partition_queues.hold_memory(batch, size): the batch's pooled_bytes and its builder's
 * memory_cap. 0, or -1 on error. */
static int
batch_hold_memory(PyObject *batch, Builder *b, Py_ssize_t size)
{
    PyObject *held = PyLong_FromSsize_t(size);
    if (held == NULL)
        return -1;
    int rc = PyObject_SetAttr(batch, str_pooled_bytes, held);
    Py_DECREF(held);
    if (rc == 0)
        b->memory_cap = size;
    return rc;
}
