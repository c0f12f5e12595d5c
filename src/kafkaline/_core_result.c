/* kafkaline._record_core: the per-batch result's state (the base of ProduceRequestResult).
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ---------------------------------------------------------------- BatchResult */

/* One batch's completion, shared by its records' futures: the compiled base of
 * kafkaline.producer.futures.ProduceRequestResult, whose pure-Python base (PythonResultState,
 * in producer/result_state.py) is the reference. No lock: each method reads and writes the
 * state without running Python code in between, so the GIL makes it atomic; callbacks and
 * waiter.release() run after the state is written, as the Python base runs them outside its
 * lock. */
typedef struct {
    PyObject_HEAD
    PyObject *topic, *partition, *base_offset, *log_append_time;
    /* None until set, never NULL (but after a GC clear): the Python side reads them as
     * slots, which the interpreter specializes only for members that are never NULL. */
    PyObject *state;     /* a BatchState; None while pending */
    PyObject *final;     /* True once completed and its callbacks ran (or split) */
    PyObject *completer; /* the thread id running its callbacks */
    PyObject *error, *error_traceback, *record_errors, *redirects;
    PyObject *hooks;   /* list of (offset delta, future, on_success, on_error), or NULL */
    PyObject *waiters; /* list of objects with release(), or NULL */
} BatchResult;

static PyTypeObject BatchResultType;
/* BatchState.SUCCEEDED and SPLIT (see register_result_states()); the ints -1 */
static PyObject *state_succeeded, *state_split, *minus_one;
static PyObject *str_release, *str_run_hook, *str_add_hook, *str_waits_for_itself, *str_value,
    *str_traceback;
static PyObject *str_complete_args[5];

/* A new pending result of `type` (BatchResultType or a subtype) for topic and partition. */
static PyObject *
batch_result_make(PyTypeObject *type, PyObject *topic, PyObject *partition)
{
    BatchResult *self = (BatchResult *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->topic = Py_NewRef(topic);
    self->partition = Py_NewRef(partition);
    self->base_offset = Py_NewRef(minus_one);
    self->log_append_time = Py_NewRef(minus_one);
    self->state = Py_NewRef(Py_None);
    self->final = Py_NewRef(Py_False);
    self->completer = Py_NewRef(Py_None);
    self->error = Py_NewRef(Py_None);
    self->error_traceback = Py_NewRef(Py_None);
    self->record_errors = Py_NewRef(Py_None);
    self->redirects = Py_NewRef(Py_None);
    return (PyObject *)self;
}

static PyObject *
BatchResult_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"topic", "partition", NULL};
    PyObject *topic, *partition;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 2) {
        topic = PyTuple_GET_ITEM(args, 0);
        partition = PyTuple_GET_ITEM(args, 1);
    }
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:ProduceRequestResult", kwlist, &topic,
                                          &partition))
        return NULL;
    return batch_result_make(type, topic, partition);
}

static int
BatchResult_traverse(BatchResult *self, visitproc visit, void *arg)
{
    Py_VISIT(self->topic);
    Py_VISIT(self->partition);
    Py_VISIT(self->base_offset);
    Py_VISIT(self->log_append_time);
    Py_VISIT(self->state);
    Py_VISIT(self->final);
    Py_VISIT(self->completer);
    Py_VISIT(self->error);
    Py_VISIT(self->error_traceback);
    Py_VISIT(self->record_errors);
    Py_VISIT(self->redirects);
    Py_VISIT(self->hooks);
    Py_VISIT(self->waiters);
    if (Py_TYPE(self)->tp_flags & Py_TPFLAGS_HEAPTYPE)
        Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
BatchResult_clear(BatchResult *self)
{
    Py_CLEAR(self->topic);
    Py_CLEAR(self->partition);
    Py_CLEAR(self->base_offset);
    Py_CLEAR(self->log_append_time);
    Py_CLEAR(self->state);
    Py_CLEAR(self->final);
    Py_CLEAR(self->completer);
    Py_CLEAR(self->error);
    Py_CLEAR(self->error_traceback);
    Py_CLEAR(self->record_errors);
    Py_CLEAR(self->redirects);
    Py_CLEAR(self->hooks);
    Py_CLEAR(self->waiters);
    return 0;
}

static void
BatchResult_dealloc(BatchResult *self)
{
    PyObject_GC_UnTrack(self);
    BatchResult_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Call release() on each waiter (the list is the caller's, taken from the result). */
static int
release_waiters(PyObject *waiters)
{
    if (waiters == NULL)
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(waiters); i++) {
        PyObject *done = PyObject_CallMethodNoArgs(PyList_GET_ITEM(waiters, i), str_release);
        if (done == NULL) {
            Py_DECREF(waiters);
            return -1;
        }
        Py_DECREF(done);
    }
    Py_DECREF(waiters);
    return 0;
}

static PyObject *
BatchResult_is_done(BatchResult *self, PyObject *Py_UNUSED(ignored))
{
    if (self->final == Py_True)
        Py_RETURN_TRUE;
    if (self->state == Py_None)
        Py_RETURN_FALSE;
    return PyObject_CallMethodNoArgs((PyObject *)self, str_waits_for_itself);
}

static PyObject *
BatchResult_record_error(BatchResult *self, PyObject *offset_delta)
{
    if (self->record_errors != Py_None) {
        int has = PySequence_Contains(self->record_errors, offset_delta);
        if (has < 0)
            return NULL;
        if (has)
            return PyObject_GetItem(self->record_errors, offset_delta);
    }
    return Py_NewRef(self->error);
}

static PyObject *
BatchResult_redirected(BatchResult *self, PyObject *offset_delta)
{
    if (self->redirects == Py_None)
        Py_RETURN_NONE;
    return PyObject_GetItem(self->redirects, offset_delta);
}

/* A list in *slot for add_waiter() and _keep_hook(). Made before they read the state: making
 * it may run the GC, and so Python code, and so another thread that completes the result. */
static int
ensure_list(PyObject **slot)
{
    if (*slot != NULL)
        return 0;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return -1;
    if (*slot == NULL)
        *slot = list;
    else
        Py_DECREF(list);
    return 0;
}

static PyObject *
BatchResult_add_waiter(BatchResult *self, PyObject *waiter)
{
    if (self->final == Py_False && ensure_list(&self->waiters) < 0)
        return NULL;
    if (self->final == Py_True)
        Py_RETURN_FALSE;
    if (PyList_Append(self->waiters, waiter) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

/* _drop_waiter(waiter): forget a waiter whose wait timed out; False if completion took it. */
static PyObject *
BatchResult_drop_waiter(BatchResult *self, PyObject *waiter)
{
    PyObject *waiters = self->waiters;
    for (Py_ssize_t i = 0; waiters != NULL && i < PyList_GET_SIZE(waiters); i++) {
        if (PyList_GET_ITEM(waiters, i) == waiter) {
            if (PySequence_DelItem(waiters, i) < 0)
                return NULL;
            Py_RETURN_TRUE;
        }
    }
    Py_RETURN_FALSE;
}

/* _keep_hook(offset_delta, future, on_success, on_error): keep it for completion; False,
 * keeping nothing, if the batch completed already. */
static PyObject *
BatchResult_keep_hook(BatchResult *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "_keep_hook() takes offset_delta, future, on_success, on_error");
        return NULL;
    }
    PyObject *hook = PyTuple_Pack(4, args[0], args[1], args[2], args[3]);
    if (hook == NULL)
        return NULL;
    if (self->state == Py_None && ensure_list(&self->hooks) < 0) {
        Py_DECREF(hook);
        return NULL;
    }
    if (self->state != Py_None) {
        Py_DECREF(hook);
        Py_RETURN_FALSE;
    }
    int failed = PyList_Append(self->hooks, hook);
    Py_DECREF(hook);
    if (failed < 0)
        return NULL;
    Py_RETURN_TRUE;
}

/* complete()'s arguments by position or name, into given[] (pre-filled with defaults). */
static int
complete_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **given)
{
    if (nargs > 5) {
        PyErr_Format(PyExc_TypeError, "complete() takes at most 5 arguments (%zd given)", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        given[i] = args[i];
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int j = 0;
        while (j < 5 && name != str_complete_args[j])
            j++;
        for (int m = 0; j == 5 && m < 5; m++)
            if (PyUnicode_Compare(name, str_complete_args[m]) == 0)
                j = m;
        if (j == 5 || j < nargs) {
            PyErr_Format(PyExc_TypeError,
                         j == 5 ? "complete() got an unexpected keyword argument %R"
                                : "complete() got multiple values for argument %R",
                         name);
            return -1;
        }
        given[j] = args[nargs + k];
    }
    if (given[0] == NULL) {
        PyErr_SetString(PyExc_TypeError, "complete() missing its argument 'state'");
        return -1;
    }
    return 0;
}

/* Run the hooks (a list taken from the result) through the Python side's _run_hook(). */
static int
run_hooks(BatchResult *self, PyObject *hooks)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hooks); i++) {
        PyObject *hook = PyList_GET_ITEM(hooks, i);
        PyObject *call[5] = {(PyObject *)self};
        for (int j = 0; j < 4; j++)
            call[j + 1] = PyTuple_GET_ITEM(hook, j);
        PyObject *ran = PyObject_VectorcallMethod(str_run_hook, call, 5, NULL);
        if (ran == NULL)
            return -1;
        Py_DECREF(ran);
    }
    return 0;
}

/* A completion's state and error agree (an error exactly when it failed; a split goes through
 * redirect()): 0, or -1 with ValueError naming the state. */
static int
check_completion(PyObject *state, PyObject *error)
{
    if (state_split == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "register_result_states() was not called");
        return -1;
    }
    if (state == state_split) {
        PyErr_SetString(PyExc_ValueError, "a split completes through redirect()");
        return -1;
    }
    if ((error == Py_None) != (state == state_succeeded)) {
        PyObject *value = PyObject_GetAttr(state, str_value);
        if (value != NULL) {
            PyErr_Format(PyExc_ValueError, "a %S batch needs an error exactly when it failed",
                         value);
            Py_DECREF(value);
        }
        return -1;
    }
    return 0;
}

/* complete(state, base_offset=-1, log_append_time=-1, error=None, record_errors=None). */
static PyObject *
BatchResult_complete(BatchResult *self, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    PyObject *given[5] = {NULL, minus_one, minus_one, Py_None, Py_None};
    if (complete_args(args, nargs, kwnames, given) < 0)
        return NULL;
    PyObject *state = given[0], *error = given[3];
    if (check_completion(state, error) < 0)
        return NULL;
    if (self->state != Py_None)
        return Py_NewRef(self->state);
    if (error != Py_None) {
        PyObject *traceback = PyObject_GetAttr(error, str_traceback);
        if (traceback == NULL)
            return NULL;
        Py_SETREF(self->error_traceback, traceback);
        Py_SETREF(self->error, Py_NewRef(error));
    }
    Py_SETREF(self->base_offset, Py_NewRef(given[1]));
    Py_SETREF(self->log_append_time, Py_NewRef(given[2]));
    Py_SETREF(self->record_errors, Py_NewRef(given[4]));
    Py_SETREF(self->state, Py_NewRef(state));
    PyObject *hooks = self->hooks;
    int failed = 0;
    if (hooks != NULL && PyList_GET_SIZE(hooks) > 0) {
        PyObject *completer = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
        if (completer == NULL)
            return NULL;
        Py_SETREF(self->completer, completer);
        self->hooks = NULL;
        failed = run_hooks(self, hooks);
        Py_DECREF(hooks);
    }
    /* Done only now, after the callbacks: what a callback did is seen by the waiters. */
    Py_SETREF(self->final, Py_NewRef(Py_True));
    PyObject *waiters = self->waiters;
    self->waiters = NULL;
    if (failed) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        int released = release_waiters(waiters);
        PyErr_Restore(type, value, traceback);
        if (released < 0)
            PyErr_WriteUnraisable((PyObject *)self);
        return NULL;
    }
    if (release_waiters(waiters) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Move one hook to its target: straight into a pending compiled result's list (nothing runs
 * in between, so the order is kept), else through the target's add_hook(). */
static int
move_hook(PyObject *redirects, PyObject *hook)
{
    PyObject *where = PyObject_GetItem(redirects, PyTuple_GET_ITEM(hook, 0));
    if (where == NULL)
        return -1;
    PyObject *target, *delta;
    if (!PyTuple_Check(where) || PyTuple_GET_SIZE(where) != 2) {
        PyErr_Format(PyExc_TypeError, "a redirect target must be (result, offset delta), not %R",
                     where);
        Py_DECREF(where);
        return -1;
    }
    target = PyTuple_GET_ITEM(where, 0);
    delta = PyTuple_GET_ITEM(where, 1);
    PyObject *moved = NULL;
    if (PyObject_TypeCheck(target, &BatchResultType) && ((BatchResult *)target)->state == Py_None) {
        BatchResult *pending = (BatchResult *)target;
        PyObject *entry = PyTuple_Pack(4, delta, PyTuple_GET_ITEM(hook, 1),
                                       PyTuple_GET_ITEM(hook, 2), PyTuple_GET_ITEM(hook, 3));
        if (entry != NULL && ensure_list(&pending->hooks) == 0) {
            /* Completed meanwhile (the GC ran Python code): its add_hook() knows what to do. */
            if (pending->state != Py_None)
                moved = PyObject_CallMethodObjArgs(target, str_add_hook, delta,
                                                   PyTuple_GET_ITEM(hook, 1),
                                                   PyTuple_GET_ITEM(hook, 2),
                                                   PyTuple_GET_ITEM(hook, 3), NULL);
            else if (PyList_Append(pending->hooks, entry) == 0)
                moved = Py_NewRef(Py_None);
        }
        Py_XDECREF(entry);
    }
    else {
        PyObject *call[5] = {target, delta, PyTuple_GET_ITEM(hook, 1), PyTuple_GET_ITEM(hook, 2),
                             PyTuple_GET_ITEM(hook, 3)};
        moved = PyObject_VectorcallMethod(str_add_hook, call, 5, NULL);
    }
    Py_DECREF(where);
    if (moved == NULL)
        return -1;
    Py_DECREF(moved);
    return 0;
}

/* redirect(targets): complete as SPLIT, the record at delta i now at targets[i]. */
static PyObject *
BatchResult_redirect(BatchResult *self, PyObject *targets)
{
    if (self->state != Py_None)
        return Py_NewRef(self->state);
    if (state_split == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "register_result_states() was not called");
        return NULL;
    }
    PyObject *redirects = PySequence_Tuple(targets);
    if (redirects == NULL)
        return NULL;
    PyObject *hooks = self->hooks;
    for (Py_ssize_t i = 0; hooks != NULL && i < PyList_GET_SIZE(hooks); i++) {
        if (move_hook(redirects, PyList_GET_ITEM(hooks, i)) < 0) {
            Py_DECREF(redirects);
            return NULL;
        }
    }
    Py_CLEAR(self->hooks);
    Py_SETREF(self->redirects, redirects);
    Py_SETREF(self->state, Py_NewRef(state_split));
    /* No callbacks run here (they moved): the waiters go on to the new results. */
    Py_SETREF(self->final, Py_NewRef(Py_True));
    PyObject *waiters = self->waiters;
    self->waiters = NULL;
    if (release_waiters(waiters) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef BatchResult_methods[] = {
    {"is_done", (PyCFunction)BatchResult_is_done, METH_NOARGS, NULL},
    {"record_error", (PyCFunction)BatchResult_record_error, METH_O, NULL},
    {"redirected", (PyCFunction)BatchResult_redirected, METH_O, NULL},
    {"add_waiter", (PyCFunction)BatchResult_add_waiter, METH_O, NULL},
    {"_drop_waiter", (PyCFunction)BatchResult_drop_waiter, METH_O, NULL},
    {"_keep_hook", (PyCFunction)(void (*)(void))BatchResult_keep_hook, METH_FASTCALL, NULL},
    {"complete", (PyCFunction)(void (*)(void))BatchResult_complete,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"redirect", (PyCFunction)BatchResult_redirect, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

#define RESULT_FIELD(name, field) \
    {name, T_OBJECT_EX, offsetof(BatchResult, field), READONLY, NULL}
static PyMemberDef BatchResult_members[] = {
    RESULT_FIELD("topic", topic),
    RESULT_FIELD("partition", partition),
    RESULT_FIELD("base_offset", base_offset),
    RESULT_FIELD("log_append_time", log_append_time),
    RESULT_FIELD("state", state),
    RESULT_FIELD("error", error),
    RESULT_FIELD("_state", state),
    RESULT_FIELD("_error", error),
    RESULT_FIELD("_error_traceback", error_traceback),
    RESULT_FIELD("_record_errors", record_errors),
    RESULT_FIELD("_redirects", redirects),
    RESULT_FIELD("_completer", completer),
    RESULT_FIELD("_final", final),
    {"_waiters", T_OBJECT, offsetof(BatchResult, waiters), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};
#undef RESULT_FIELD

static PyTypeObject BatchResultType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.BatchResult",
    .tp_doc = "A batch's completion state (the base of ProduceRequestResult).",
    .tp_basicsize = sizeof(BatchResult),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = BatchResult_new,
    .tp_dealloc = (destructor)BatchResult_dealloc,
    .tp_traverse = (traverseproc)BatchResult_traverse,
    .tp_clear = (inquiry)BatchResult_clear,
    .tp_methods = BatchResult_methods,
    .tp_members = BatchResult_members,
};

/* register_result_states(succeeded, split): the BatchState members complete() compares to. */
static PyObject *
core_register_result_states(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "register_result_states() takes succeeded, split");
        return NULL;
    }
    Py_XSETREF(state_succeeded, Py_NewRef(args[0]));
    Py_XSETREF(state_split, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}
