/* kafkaline._record_core: the partition queue's lock.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ------------------------------------------------------------------------------ QueueLock */

/* A partition queue's lock: threading.Lock's interface (acquire, release, locked, `with`), so
 * the accumulator's Python takes it as any lock, and OpenBatchSender takes it in C without
 * calling Python. Every use holds the GIL, so the lock's state is a flag the GIL guards: taking
 * a free lock and releasing one without waiters costs a few instructions. A thread that finds
 * it held waits with the GIL released on `wake`, a PyThread lock used as a semaphore of at
 * most one (posted: released once for the waiters and not yet taken by one), and checks the
 * flag again when woken. Like threading.Lock it is not owned by a thread, and a copy in a
 * child made by os.fork() keeps the state it had at the fork. */
#ifdef Py_GIL_DISABLED
#error "QueueLock relies on the GIL"
#endif
typedef struct {
    PyObject_HEAD
    PyThread_type_lock wake; /* held unless posted */
    Py_ssize_t waiters;
    char locked;
    char posted;
} QueueLock;

static PyObject *
QueueLock_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "QueueLock() takes no arguments");
        return NULL;
    }
    QueueLock *self = (QueueLock *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->wake = PyThread_allocate_lock();
    if (self->wake == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    PyThread_acquire_lock(self->wake, NOWAIT_LOCK);
    return (PyObject *)self;
}

static void
QueueLock_dealloc(QueueLock *self)
{
    if (self->wake != NULL) {
        if (!self->posted)
            PyThread_release_lock(self->wake);
        PyThread_free_lock(self->wake);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline double
monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Takes the lock, waiting up to timeout seconds (< 0: forever) with the GIL released and
 * running signal handlers when a signal interrupts the wait, as threading.Lock does:
 * 1 taken, 0 timed out, -1 with an exception set (a signal handler raised). */
static int
queue_lock_wait(QueueLock *self, double timeout)
{
    if (timeout == 0)
        return 0;
    double deadline = timeout > 0 ? monotonic_seconds() + timeout : 0;
    int rc = 0;
    self->waiters++;
    for (;;) {
        PY_TIMEOUT_T wait = -1;
        if (timeout > 0) {
            double left = deadline - monotonic_seconds();
            if (left <= 0)
                break;
            wait = (PY_TIMEOUT_T)(left * 1e6);
        }
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->wake, wait, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED) {
            self->posted = 0;
            if (!self->locked) {
                self->locked = 1;
                rc = 1;
                break;
            }
        }
        else if (r == PY_LOCK_FAILURE)
            break;
        else if (Py_MakePendingCalls() < 0) {
            rc = -1;
            break;
        }
    }
    self->waiters--;
    return rc;
}

static inline int
queue_lock_take(QueueLock *self, double timeout)
{
    if (!self->locked) {
        self->locked = 1;
        return 1;
    }
    return queue_lock_wait(self, timeout);
}

/* Releases a held lock, waking a waiter if any. */
static inline void
queue_lock_give(QueueLock *self)
{
    self->locked = 0;
    if (self->waiters > 0 && !self->posted) {
        self->posted = 1;
        PyThread_release_lock(self->wake);
    }
}

static PyObject *
QueueLock_acquire(QueueLock *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd:acquire", kwlist, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    int rc = queue_lock_take(self, blocking ? timeout : 0);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *
QueueLock_enter(QueueLock *self, PyObject *Py_UNUSED(ignored))
{
    int rc = queue_lock_take(self, -1);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *
QueueLock_release(QueueLock *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    queue_lock_give(self);
    Py_RETURN_NONE;
}

static PyObject *
QueueLock_exit(QueueLock *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    return QueueLock_release(self, NULL);
}

static PyObject *
QueueLock_locked(QueueLock *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->locked);
}

static PyObject *
QueueLock_repr(QueueLock *self)
{
    return PyUnicode_FromFormat("<%s QueueLock object at %p>",
                                self->locked ? "locked" : "unlocked", self);
}

static PyMethodDef QueueLock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))QueueLock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1): take the lock, as threading.Lock.acquire()."},
    {"release", (PyCFunction)QueueLock_release, METH_NOARGS, "Release the lock."},
    {"locked", (PyCFunction)QueueLock_locked, METH_NOARGS, "Whether the lock is held."},
    {"__enter__", (PyCFunction)QueueLock_enter, METH_NOARGS, "Take the lock."},
    {"__exit__", (PyCFunction)(void (*)(void))QueueLock_exit, METH_FASTCALL,
     "Release the lock."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject QueueLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.QueueLock",
    .tp_doc = "A partition queue's lock, threading.Lock's interface; the compiled send() takes "
              "it without calling Python.",
    .tp_basicsize = sizeof(QueueLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = QueueLock_new,
    .tp_dealloc = (destructor)QueueLock_dealloc,
    .tp_repr = (reprfunc)QueueLock_repr,
    .tp_methods = QueueLock_methods,
};
