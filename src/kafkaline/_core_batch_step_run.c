/* kafkaline._record_core: send_batch()'s rounds of the append protocol for a run of records.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* step.append_run(queue, keys, values, timestamp, positions, start, segments, wakeup, now):
 * RecordAccumulator.append_many's run of records (one timestamp for all, no headers, the
 * partition given) through the rounds of the append protocol (AppendSide._append_records)
 * that take nothing but the common path: under the queue's lock, the last batch (taking the
 * rest of its limit from the pool first, as _memory_needed() has a run's batch do), then new
 * batches made here holding their whole limit, each filled before it is queued, the last
 * one giving back what its records do not use. A round that would need anything else (memory
 * not free now or waited for, the accumulator closed, a record to check, a batch that is not
 * the compiled builder's) is left undone, and so is the rest of the run: the Python protocol
 * (the reference) goes on from there. Returns (records appended, whether a batch was made or
 * filled); wakeup() is called, with no lock held, whenever a new batch queued behind another,
 * as the protocol calls it. */

typedef struct {
    Columns c;
    Positions order;
    int64_t timestamp;
    PyObject *timestamp_obj, *segments, *now;
} RunInput;

static int
run_pool_give(BatchStep *st, Py_ssize_t size)
{
    PyObject *given = step_call_method(st->pool, str_deallocate, size);
    Py_XDECREF(given);
    return given == NULL ? -1 : 0;
}

/* AppendSide._give_back_unused() for a batch the run ended in. */
static int
run_give_back_unused(BatchStep *st, PyObject *batch, Builder *b, Py_ssize_t held)
{
    Py_ssize_t unused = held - b->used;
    if (unused <= 0 || b->closed || (b->count && b->used >= b->limit))
        return 0;
    if (batch_hold_memory(batch, b, held - unused) < 0)
        return -1;
    return run_pool_give(st, unused);
}

/* Records from position j into b; then the segment, and the unused memory given back if the
 * run ended there: how many were taken, -1 on error. */
static Py_ssize_t
run_fill(BatchStep *st, RunInput *in, PyObject *batch, Builder *b, Py_ssize_t j,
         Py_ssize_t held, int split)
{
    Py_ssize_t first = b->count;
    Py_ssize_t added = append_positions(b, &in->c, &in->order, j, in->timestamp_obj);
    if (added <= 0)
        return added;
    PyObject *result = read_slot(batch, str_result, &st->batch_result);
    if (result == NULL)
        return -1;
    PyObject *segment = Py_BuildValue("(Onn)", result, first, added);
    Py_DECREF(result);
    if (segment == NULL)
        return -1;
    int rc = PyList_Append(in->segments, segment);
    Py_DECREF(segment);
    if (rc < 0)
        return -1;
    if (j + added >= in->order.count && !split && run_give_back_unused(st, batch, b, held) < 0)
        return -1;
    return added;
}

/* The round on the queue's last batch, if it is the compiled builder's and not full: the
 * records taken (0: none, go on to a new batch), -2 to leave the round to the protocol, -1
 * on error. */
static Py_ssize_t
run_last_batch(BatchStep *st, RunInput *in, PyObject *batch, Py_ssize_t j)
{
    PyObject *builder = read_slot(batch, str_builder, &st->batch_builder);
    if (builder == NULL)
        return -1;
    Py_ssize_t rc = -2, held = 0, extra = 0;
    Builder *b = (Builder *)builder;
    PyObject *split = NULL;
    if (!Py_IS_TYPE(builder, &BuilderType))
        goto done;
    if (b->closed || (b->count && b->used >= b->limit)) {
        rc = 0; /* is_full: passed over */
        goto done;
    }
    if ((split = read_slot(batch, str_is_split_batch, &st->batch_split)) == NULL) {
        rc = -1;
        goto done;
    }
    int got = attr_ssize(batch, str_pooled_bytes, &st->batch_pooled, &held);
    if (got != 0 || (split != Py_False && split != Py_True)) {
        rc = got < 0 ? -1 : -2;
        goto done;
    }
    if (split == Py_False && held < b->limit) { /* _memory_needed(): the rest of the limit */
        extra = b->limit - held;
        int taken = PyObject_TypeCheck(st->pool, &PoolStateType)
                        ? pool_take_now((PoolState *)st->pool, extra)
                        : 0;
        if (taken <= 0 || batch_hold_memory(batch, b, held + extra) < 0) {
            rc = taken < 0 ? -1 : -2;
            if (taken > 0 && run_pool_give(st, extra) < 0)
                rc = -1;
            goto done;
        }
    }
    rc = run_fill(st, in, batch, b, j, held + extra, split == Py_True);
    if (rc == 0 && extra && (batch_hold_memory(batch, b, held) < 0 || run_pool_give(st, extra) < 0))
        rc = -1; /* (the memory was not needed after all) */
done:
    Py_XDECREF(split);
    Py_DECREF(builder);
    return rc;
}

/* The memory a new batch takes for the run from position j (_first_reservation() of a run):
 * its whole limit, or the next record's bound if larger; 0 to leave it to the protocol. */
static Py_ssize_t
run_reservation(BatchStep *st, RunInput *in, PyObject *queue, Py_ssize_t j, double *ratio)
{
    Py_ssize_t at = position_at(&in->order, j, in->c.n);
    if (at < 0) {
        PyErr_Clear(); /* the protocol names it */
        return 0;
    }
    StepRecord r;
    if (step_record(st, PySequence_Fast_ITEMS(in->c.kseq)[at],
                    PySequence_Fast_ITEMS(in->c.vseq)[at], in->timestamp, &r))
        return 0;
    int declined = step_ratio(st, queue, ratio);
    if (declined)
        return declined < 0 ? -1 : 0;
    Py_ssize_t limit = st->batch_size;
    if (st->compression_id != 0)
        limit = HEADER_SIZE + records_room(st->batch_size, *ratio);
    Py_ssize_t bound = HEADER_SIZE + r.bound;
    return limit > bound ? limit : bound;
}

/* The round that makes a new batch: records taken, -2 to leave it to the protocol, -1. */
static Py_ssize_t
run_new_batch(BatchStep *st, RunInput *in, PyObject *queue, PyObject *batches, Py_ssize_t j)
{
    PyObject *closed = PyDict_GetItemWithError(st->accumulator_dict, str_closed);
    if (closed != Py_False)
        return closed == NULL && PyErr_Occurred() ? -1 : -2;
    double ratio = 1.0;
    Py_ssize_t memory = run_reservation(st, in, queue, j, &ratio);
    if (memory <= 0)
        return memory < 0 ? -1 : -2;
    int taken = PyObject_TypeCheck(st->pool, &PoolStateType)
                    ? pool_take_now((PoolState *)st->pool, memory)
                    : 0;
    if (taken <= 0)
        return taken < 0 ? -1 : -2;
    PyObject *tp = read_slot(queue, str_tp, &st->queue_tp);
    PyObject *batch = tp == NULL ? NULL : step_make_batch(st, tp, in->now, memory, ratio);
    Py_XDECREF(tp);
    PyObject *builder = batch == NULL ? NULL : read_slot(batch, str_builder, &st->batch_builder);
    Py_ssize_t added = builder == NULL ? -1 : -2;
    if (builder != NULL && Py_IS_TYPE(builder, &BuilderType)) {
        ((Builder *)builder)->memory_cap = memory;
        added = run_fill(st, in, batch, (Builder *)builder, j, memory, 0);
    }
    int queued = added > 0 ? step_queue_batch(st, batches, batch) : -1;
    if (queued == -1 && added > 0)
        added = -1;
    if (queued == -2)
        added = -1; /* queued, not counted: an error is set */
    if (queued == -1) { /* the memory is nobody's: back to the pool */
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        if (run_pool_give(st, memory) < 0)
            PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
    }
    if (added == 0)
        added = -2; /* an empty batch took nothing: the protocol raises */
    Py_XDECREF(builder);
    Py_XDECREF(batch);
    return added;
}

/* One round under the queue's lock: records taken (0 or -2: the protocol goes on from j),
 * -1 on error; *made when a batch was made or filled, *behind when a new one queued behind
 * another. */
static Py_ssize_t
run_round(BatchStep *st, RunInput *in, PyObject *queue, Py_ssize_t j, int *made, int *behind)
{
    PyObject *lock = read_slot(queue, str_lock, &st->queue_lock);
    if (lock == NULL)
        return -1;
    PyObject *batches = read_slot(queue, str_batches, &st->queue_batches);
    Py_ssize_t taken = -2;
    if (batches == NULL || !Py_IS_TYPE(lock, &QueueLockType) ||
        queue_lock_take((QueueLock *)lock, -1) < 0) {
        taken = batches == NULL || PyErr_Occurred() ? -1 : -2;
        goto done;
    }
    Py_ssize_t n = PyObject_Length(batches);
    taken = n < 0 ? -1 : 0;
    if (n > 0) {
        PyObject *last = PySequence_GetItem(batches, n - 1);
        taken = last == NULL ? -1 : run_last_batch(st, in, last, j);
        Py_XDECREF(last);
        if (taken > 0 && (j + taken < in->order.count || n > 1))
            *made = 1; /* the last batch filled, or has batches before it */
    }
    if (taken == 0) {
        taken = run_new_batch(st, in, queue, batches, j);
        if (taken > 0) {
            *made = 1;
            *behind = PyObject_Length(batches) > 1;
        }
    }
    queue_lock_give((QueueLock *)lock);
done:
    Py_XDECREF(batches);
    Py_DECREF(lock);
    return taken;
}

/* The rounds from `start` until the run is done or a round is left to the protocol: records
 * taken, or -1. */
static Py_ssize_t
run_rounds(BatchStep *st, RunInput *in, PyObject *queue, PyObject *wakeup, Py_ssize_t start,
           int *made)
{
    Py_ssize_t j = start;
    while (j < in->order.count) {
        int behind = 0;
        Py_ssize_t taken = run_round(st, in, queue, j, made, &behind);
        if (taken < 0 && taken != -2)
            return -1;
        if (behind && wakeup != Py_None) {
            PyObject *woken = PyObject_CallNoArgs(wakeup);
            if (woken == NULL)
                return -1;
            Py_DECREF(woken);
        }
        if (taken <= 0)
            break;
        j += taken;
    }
    return j - start;
}

static PyObject *
BatchStep_append_run(BatchStep *st, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "append_run() takes queue, keys, values, timestamp, "
                                         "positions, start, segments, wakeup and now");
        return NULL;
    }
    PyObject *queue = args[0], *positions = args[4];
    RunInput in = {.c = {NULL, NULL, NULL, NULL, 0},
                   .order = {.has_view = 0, .seq = NULL, .items = NULL, .objects = NULL},
                   .timestamp_obj = args[3], .segments = args[6], .now = args[8]};
    Py_ssize_t start = PyLong_AsSsize_t(args[5]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(in.segments) || !PyFloat_CheckExact(in.now) ||
        !PyLong_CheckExact(in.timestamp_obj)) {
        PyErr_SetString(PyExc_TypeError,
                        "append_run(): segments must be a list, now a float, timestamp an int");
        return NULL;
    }
    PyObject *result = NULL;
    int made = 0, out_of_range = 0;
    Py_ssize_t taken = 0;
    if (columns_open(args[1], args[2], in.timestamp_obj, Py_None, &in.c) < 0)
        goto done;
    in.order.count = in.c.n;
    if ((positions != Py_None && positions_open(positions, &in.order) < 0) ||
        as_timestamp(in.timestamp_obj, &in.timestamp, &out_of_range) < 0)
        goto done;
    /* A timestamp past int64, the compiled builder-less or transactional cases: the
     * protocol's (compression_id < 0: a codec or level refused at init). */
    if (!out_of_range && st->compression_id >= 0 && start >= 0 && start < in.order.count)
        taken = run_rounds(st, &in, queue, args[7], start, &made);
    if (taken >= 0)
        result = Py_BuildValue("(nO)", taken, made ? Py_True : Py_False);
done:
    positions_close(&in.order);
    columns_close(&in.c);
    return result;
}

static PyMethodDef BatchStep_methods[] = {
    {"append_run", (PyCFunction)(void (*)(void))BatchStep_append_run, METH_FASTCALL,
     "append_run(queue, keys, values, timestamp, positions, start, segments, wakeup, now): "
     "(records appended, a batch made or filled) for RecordAccumulator.append_many's run, "
     "as far as the append protocol's common rounds take it."},
    {NULL, NULL, 0, NULL},
};
