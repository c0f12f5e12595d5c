/* kafkaline._record_core: the new-batch step's other case, a last batch that grows.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* A record send() found room for in its partition's last batch, but not in the buffer memory
 * that batch holds (its first few KiB outgrown), went to send()'s general path, whose first
 * step (AppendSide._try_last()) has the batch take the memory it needs, then the record.
 * When the sender's new_batch is a NewBatchStep, that is done here in the common case: the
 * queue's lock a QueueLock, the last batch open, in the pool, with the compiled builder and
 * room for the record, and the pool giving the memory at once (free now, nobody waiting).
 * The Sender is woken when the batch has others before it, as the general path does. Else
 * nothing is done and the general path decides. */

/* AppendSide._memory_needed() for one record and a batch in the pool holding `held`. */
static inline Py_ssize_t
grow_memory_needed(const BatchStep *st, const Builder *b, Py_ssize_t held, const StepRecord *r)
{
    Py_ssize_t need = b->used + r->bound < b->limit ? b->used + r->bound : b->limit;
    if (need <= held)
        return 0;
    if (b->limit - held > st->total_memory)
        return need - held; /* the whole limit could never be free */
    return (need > b->limit ? need : b->limit) - held;
}

/* `extra` bytes from the pool if free now: 1, 0 when not, -1 on error. */
static int
grow_take_now(BatchStep *st, Py_ssize_t extra)
{
    int taken = PyObject_TypeCheck(st->pool, &PoolStateType)
                    ? pool_take_now((PoolState *)st->pool, extra)
                    : 0;
    if (taken != 0)
        return taken;
    PyObject *answer = step_call_method(st->pool, str_try_allocate, extra);
    if (answer == NULL)
        return -1;
    taken = answer == Py_True;
    Py_DECREF(answer);
    return taken;
}

/* The batch, holding `held`, takes `extra` more and the record: its future; None when the
 * pool has not the memory free now or the record did not go in (the memory given back);
 * NULL on error. */
static PyObject *
grow_into(BatchStep *st, PyObject *batch, Builder *b, Py_ssize_t held, Py_ssize_t extra,
          const StepRecord *r)
{
    int taken = grow_take_now(st, extra);
    if (taken <= 0)
        return taken < 0 ? NULL : Py_NewRef(Py_None);
    int rc = batch_hold_memory(batch, b, held + extra);
    if (rc == 0) {
        rc = try_append(b, r->timestamp, r->key_size < 0 ? NULL : PyBytes_AS_STRING(r->key),
                        r->key_size, r->value_size < 0 ? NULL : PyBytes_AS_STRING(r->value),
                        r->value_size, NULL, 0, b->limit);
        if (rc == APPENDED) {
            PyObject *result = read_slot(batch, str_result, &st->batch_result);
            PyObject *future = result == NULL ? NULL
                                              : future_make(st->future_type, result,
                                                            b->count - 1, r->key_size,
                                                            r->value_size, r->timestamp);
            Py_XDECREF(result);
            return future; /* or NULL: the memory is the batch's now, as the record */
        }
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    if (rc != 0 || batch_hold_memory(batch, b, held) == 0) { /* not held: back to the pool */
        PyObject *given = step_call_method(st->pool, str_deallocate, extra);
        Py_XDECREF(given);
    }
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

/* Under the queue's lock (a LockedStep): the record's future in the last batch grown, None
 * (nothing done) or NULL; *behind when the batch has others before it. */
static PyObject *
grow_locked(BatchStep *st, PyObject *Py_UNUSED(queue), PyObject *batches, const StepRecord *r,
            int *behind)
{
    Py_ssize_t n = PyObject_Length(batches);
    if (n <= 0)
        return n < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *batch = PySequence_GetItem(batches, n - 1);
    if (batch == NULL)
        return NULL;
    PyObject *future = NULL;
    PyObject *builder = read_slot(batch, str_builder, &st->batch_builder);
    PyObject *split = builder ? read_slot(batch, str_is_split_batch, &st->batch_split) : NULL;
    Py_ssize_t held = 0, extra = 0;
    int rc = split == NULL ? -1 : attr_ssize(batch, str_pooled_bytes, &st->batch_pooled, &held);
    if (rc < 0)
        goto done;
    Builder *b = (Builder *)builder;
    if (rc == 0 && split == Py_False && Py_IS_TYPE(builder, &BuilderType) && !b->closed &&
        !(b->count && b->used >= b->limit) && held < b->limit &&
        !builder_has_no_room(b, r->timestamp, r->key_size, r->value_size))
        extra = grow_memory_needed(st, b, held, r);
    future = extra > 0 ? grow_into(st, batch, b, held, extra, r) : Py_NewRef(Py_None);
    *behind = n > 1;
done:
    Py_XDECREF(split);
    Py_XDECREF(builder);
    Py_DECREF(batch);
    return future;
}

/* The record into the queue's last batch, grown: its future, None (nothing done) or NULL. */
static PyObject *
batch_step_grow(BatchStep *st, PyObject *queue, const StepRecord *r)
{
    return step_under_queue_lock(st, queue, r, grow_locked);
}

/* send()'s call for a record its open batch has room for but not the memory: the record's
 * future, or None for the general path (also when new_batch is not a NewBatchStep); NULL on
 * error. args as send()'s (value, key at 1 and 2). */
static PyObject *
sender_grow(OpenBatchSender *self, PyObject *const *args, PyObject *queue, long long timestamp)
{
    StepRecord r;
    if (self->new_batch == NULL || !Py_IS_TYPE(self->new_batch, &BatchStepType) ||
        step_record((BatchStep *)self->new_batch, args[2], args[1], timestamp, &r))
        return Py_NewRef(Py_None);
    return batch_step_grow((BatchStep *)self->new_batch, queue, &r);
}
