/* kafkaline._record_core: the buffer pool's state, where the new-batch step reads it.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ---------------------------------------------------------------- PoolState */

/* The base of kafkaline.producer.buffer_pool.BufferPool in the compiled build (the pure
 * build's is PythonPoolState, the same four slots): the bytes free, whether it is closed, its
 * lock and its queue of waiting threads, which the pool's Python reads and writes as plain
 * attributes, under its lock. The new-batch step takes memory here without a call. */
typedef struct {
    PyObject_HEAD
    /* Python objects, not C ints: the pool's Python then reads and writes them as slots,
     * which the interpreter specialises (a C int member was dearer for every allocate() and
     * deallocate(): docs/performance.md, "Notes moved from the code"). */
    PyObject *available; /* int: bytes free now */
    PyObject *closed;    /* bool */
    PyObject *lock;      /* a QueueLock in the compiled build */
    PyObject *waiters;   /* a deque of Conditions */
} PoolState;

/* BufferPool.try_allocate(size) when nobody is in the pool's code: the lock free (no thread
 * between its reads and writes of the state; nothing here lets another thread run), nobody
 * waiting, the pool open and the memory free. 1 taken, 0 not (nothing done: the caller asks
 * the pool itself), -1 on error. */
static int
pool_take_now(PoolState *p, Py_ssize_t size)
{
    if (p->lock == NULL || !Py_IS_TYPE(p->lock, &QueueLockType) || p->waiters == NULL ||
        ((QueueLock *)p->lock)->locked || p->closed != Py_False || p->available == NULL ||
        !PyLong_CheckExact(p->available))
        return 0;
    Py_ssize_t available = PyLong_AsSsize_t(p->available);
    if (available < size) {
        if (available == -1 && PyErr_Occurred())
            PyErr_Clear(); /* past Py_ssize_t: the pool's own code decides */
        return 0;
    }
    Py_ssize_t waiting = PyObject_Length(p->waiters);
    if (waiting != 0) {
        if (waiting < 0)
            PyErr_Clear(); /* not a sized queue: the pool's own code decides */
        return 0;
    }
    PyObject *left = PyLong_FromSsize_t(available - size);
    if (left == NULL)
        return -1;
    Py_SETREF(p->available, left);
    return 1;
}

static int
PoolState_traverse(PoolState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lock);
    Py_VISIT(self->waiters);
    if (Py_TYPE(self)->tp_flags & Py_TPFLAGS_HEAPTYPE)
        Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
PoolState_clear(PoolState *self)
{
    Py_CLEAR(self->available);
    Py_CLEAR(self->closed);
    Py_CLEAR(self->lock);
    Py_CLEAR(self->waiters);
    return 0;
}

static void
PoolState_dealloc(PoolState *self)
{
    PyObject_GC_UnTrack(self);
    PoolState_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef PoolState_members[] = {
    {"_available", T_OBJECT_EX, offsetof(PoolState, available), 0, "Bytes free now."},
    {"_closed", T_OBJECT_EX, offsetof(PoolState, closed), 0, "Whether close() was called."},
    {"_lock", T_OBJECT_EX, offsetof(PoolState, lock), 0, "The pool's lock."},
    {"_waiters", T_OBJECT_EX, offsetof(PoolState, waiters), 0, "Threads waiting, in turn."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject PoolStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.PoolState",
    .tp_doc = "The buffer pool's state: _available, _closed, _lock, _waiters.",
    .tp_basicsize = sizeof(PoolState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)PoolState_dealloc,
    .tp_traverse = (traverseproc)PoolState_traverse,
    .tp_clear = (inquiry)PoolState_clear,
    .tp_members = PoolState_members,
};
