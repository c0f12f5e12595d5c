/* kafkaline._record_core: the new-batch step's type: its arguments and life cycle.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* The codec, level and estimate of compressed batches (see BatchStep), the codec and level
 * checked as a builder's call checks them: a builder is made with them. */
static int
batch_step_set_compression(BatchStep *self, PyObject *compression, PyObject *level,
                           PyObject *estimate)
{
    if (ensure_python_side() < 0)
        return -1;
    long id = 0;
    if (compression == NULL)
        compression = compression_none;
    if (compression != compression_none || level != Py_None) {
        if (!PyCallable_Check(estimate)) {
            PyErr_SetString(PyExc_TypeError, "NewBatchStep: estimate must be callable");
            return -1;
        }
        BuilderArgs a = {.size_limit = HEADER_SIZE + 1, .compression = compression,
                         .level = level, .log_append_time = Py_None, .ratio = 1.0};
        Builder *trial = (Builder *)BuilderType.tp_alloc(&BuilderType, 0);
        if (trial == NULL)
            return -1;
        if (builder_setup(trial, &a) < 0 || (trial->compression_id == 0 && level != Py_None))
            id = -1; /* refused, or a level without a codec: the protocol decides */
        else
            compression = trial->compression, id = trial->compression_id;
        PyErr_Clear();
        Py_XSETREF(self->compression, Py_NewRef(compression));
        Py_DECREF(trial);
    }
    else {
        Py_XSETREF(self->compression, Py_NewRef(compression_none));
    }
    PyObject *kwnames = Py_BuildValue("(OOO)", str_compression, str_compression_level, str_ratio);
    if (kwnames == NULL)
        return -1;
    Py_XSETREF(self->batch_kwnames, kwnames);
    Py_XSETREF(self->level, Py_NewRef(level));
    Py_XSETREF(self->estimate, Py_NewRef(estimate));
    self->compression_id = id;
    return 0;
}

/* The pool's total_memory, in *total: 0, or -1 on error. */
static int
batch_step_pool_total(PyObject *pool, Py_ssize_t *total)
{
    PyObject *total_obj = PyObject_GetAttr(pool, str_total_memory);
    if (total_obj == NULL)
        return -1;
    *total = PyLong_AsSsize_t(total_obj);
    Py_DECREF(total_obj);
    return *total == -1 && PyErr_Occurred() ? -1 : 0;
}

static int
BatchStep_init(BatchStep *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"accumulator",     "pool",       "incomplete",  "incomplete_lock",
                             "batch_type",      "result_type", "future_type", "batch_size",
                             "first_memory",    "record_overhead", "fallback", "wakeup",
                             "compression",     "compression_level", "estimate", NULL};
    PyObject *accumulator, *pool, *incomplete, *lock, *batch_type, *result_type, *future_type,
        *fallback, *wakeup, *compression = NULL, *level = Py_None, *estimate = Py_None;
    Py_ssize_t batch_size, first_memory, overhead, total = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!O!OO!O!nnnOO|$OOO:NewBatchStep", kwlist,
                                     &accumulator, &pool, &PySet_Type, &incomplete,
                                     &QueueLockType, &lock, &batch_type, &PyType_Type,
                                     &result_type, &PyType_Type, &future_type, &batch_size,
                                     &first_memory, &overhead, &fallback, &wakeup, &compression,
                                     &level, &estimate))
        return -1;
    if (!PyType_IsSubtype((PyTypeObject *)future_type, &RecordFutureType) ||
        !PyCallable_Check(batch_type) || !PyCallable_Check(fallback) ||
        !PyCallable_Check(wakeup)) {
        PyErr_SetString(PyExc_TypeError, "NewBatchStep: future_type must be a RecordFuture "
                                         "type; batch_type, fallback and wakeup callables");
        return -1;
    }
    if (batch_step_pool_total(pool, &total) < 0 ||
        batch_step_set_compression(self, compression, level, estimate) < 0)
        return -1;
    PyObject *d = PyObject_GenericGetDict(accumulator, NULL);
    PyObject *size_obj = d != NULL ? PyLong_FromSsize_t(batch_size) : NULL;
    PyObject *zero_float = size_obj != NULL ? PyFloat_FromDouble(0.0) : NULL;
    if (zero_float == NULL) {
        Py_XDECREF(d);
        Py_XDECREF(size_obj);
        return -1;
    }
    Py_XSETREF(self->accumulator_dict, d);
    Py_XSETREF(self->batch_size_obj, size_obj);
    Py_XSETREF(self->zero_float, zero_float);
    Py_XSETREF(self->zero, PyLong_FromLong(0)); /* a cached small int: never NULL */
    Py_XSETREF(self->result_type, (PyTypeObject *)Py_NewRef(result_type));
    Py_XSETREF(self->pool, Py_NewRef(pool));
    Py_XSETREF(self->incomplete, Py_NewRef(incomplete));
    Py_XSETREF(self->incomplete_lock, Py_NewRef(lock));
    Py_XSETREF(self->batch_type, Py_NewRef(batch_type));
    Py_XSETREF(self->future_type, (PyTypeObject *)Py_NewRef(future_type));
    Py_XSETREF(self->fallback, Py_NewRef(fallback));
    Py_XSETREF(self->wakeup, Py_NewRef(wakeup));
    self->batch_size = batch_size;
    self->first_memory = first_memory;
    self->total_memory = total;
    self->record_overhead = overhead;
    self->batch_direct = step_batch_layout(self);
    self->vectorcall = BatchStep_vectorcall;
    return 0;
}

static int
BatchStep_traverse(BatchStep *self, visitproc visit, void *arg)
{
    Py_VISIT(self->accumulator_dict);
    Py_VISIT(self->pool);
    Py_VISIT(self->incomplete);
    Py_VISIT(self->incomplete_lock);
    Py_VISIT(self->batch_type);
    Py_VISIT(self->result_type);
    Py_VISIT(self->future_type);
    Py_VISIT(self->fallback);
    Py_VISIT(self->wakeup);
    Py_VISIT(self->compression);
    Py_VISIT(self->level);
    Py_VISIT(self->estimate);
    Py_VISIT(self->batch_kwnames);
    Py_VISIT(self->queue_lock.type);
    Py_VISIT(self->queue_batches.type);
    Py_VISIT(self->queue_tp.type);
    Py_VISIT(self->batch_builder.type);
    Py_VISIT(self->batch_result.type);
    Py_VISIT(self->batch_pooled.type);
    Py_VISIT(self->batch_split.type);
    return 0;
}

static int
BatchStep_clear(BatchStep *self)
{
    Py_CLEAR(self->accumulator_dict);
    Py_CLEAR(self->pool);
    Py_CLEAR(self->incomplete);
    Py_CLEAR(self->incomplete_lock);
    Py_CLEAR(self->batch_type);
    Py_CLEAR(self->result_type);
    Py_CLEAR(self->future_type);
    Py_CLEAR(self->zero);
    Py_CLEAR(self->zero_float);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->wakeup);
    Py_CLEAR(self->compression);
    Py_CLEAR(self->level);
    Py_CLEAR(self->estimate);
    Py_CLEAR(self->batch_kwnames);
    Py_CLEAR(self->batch_size_obj);
    Py_CLEAR(self->queue_lock.type);
    Py_CLEAR(self->queue_batches.type);
    Py_CLEAR(self->queue_tp.type);
    Py_CLEAR(self->batch_builder.type);
    Py_CLEAR(self->batch_result.type);
    Py_CLEAR(self->batch_pooled.type);
    Py_CLEAR(self->batch_split.type);
    return 0;
}

static void
BatchStep_dealloc(BatchStep *self)
{
    PyObject_GC_UnTrack(self);
    BatchStep_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
BatchStep_get_fallback(BatchStep *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->fallback == NULL ? Py_None : self->fallback);
}

static PyGetSetDef BatchStep_getset[] = {
    {"fallback", (getter)BatchStep_get_fallback, NULL,
     "The Python step the records this one declines go to.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BatchStepType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.NewBatchStep",
    .tp_doc = "step(topic, partition, timestamp_ms, key, value): a record's future in a new "
              "batch made here in the common case, else what fallback returns.",
    .tp_basicsize = sizeof(BatchStep),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(BatchStep, vectorcall),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)BatchStep_init,
    .tp_dealloc = (destructor)BatchStep_dealloc,
    .tp_traverse = (traverseproc)BatchStep_traverse,
    .tp_clear = (inquiry)BatchStep_clear,
    .tp_call = PyVectorcall_Call,
    .tp_getset = BatchStep_getset,
    .tp_methods = BatchStep_methods,
};
