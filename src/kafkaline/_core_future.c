/* kafkaline._record_core: the per-record future.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ---------------------------------------------------------------- RecordFuture */

/* The per-record handle send() returns: the batch's ProduceRequestResult and the record's
 * offset delta, serialized key and value sizes and timestamp, kept as C ints (an int object
 * is made only when Python reads one). kafkaline.producer.futures.FutureRecordMetadata
 * subclasses it with the future's methods and no slots of its own, and registers itself
 * (register_future_type), so that its instances skip subtype_dealloc and come from, and go
 * back to, a free list: a discarded future is the common case. Compared by identity (the
 * default), as the pure build's FutureRecordMetadata is. */
typedef struct {
    PyObject_HEAD
    PyObject *batch_result;
    long long offset_delta;
    long long key_size;
    long long value_size;
    long long timestamp;
    /* NULL, or when constructed from Python with a field that is not an int of 64 bits
     * (a timestamp out of range fails its batch later, not here): the four fields as given. */
    PyObject *given;
} RecordFuture;

static PyTypeObject RecordFutureType;
static void RecordFuture_dealloc(RecordFuture *self);

/* Freed futures kept for reuse: the memory of objects of RecordFutureType or a registered
 * subtype (all the same size), untracked, with no references held. */
#define FUTURE_FREE_MAX 256
static PyObject *future_free[FUTURE_FREE_MAX];
static int future_free_count;

/* A new future of `type`, RecordFutureType or a subtype, tracked by the GC; batch_result
 * gets a new reference. The free list serves only the types whose dealloc fills it (the
 * base and registered subtypes): a further subclass may need other memory (a managed
 * __dict__ lives before the object). */
KL_ALWAYS_INLINE PyObject *
future_make(PyTypeObject *type, PyObject *batch_result, long long offset_delta,
            long long key_size, long long value_size, long long timestamp)
{
    RecordFuture *f;
    int reused = future_free_count > 0 && type->tp_dealloc == (destructor)RecordFuture_dealloc;
    if (reused) {
        f = (RecordFuture *)future_free[--future_free_count];
        PyObject_Init((PyObject *)f, type); /* a reference to a heap type, as tp_alloc */
    }
    else if ((f = (RecordFuture *)type->tp_alloc(type, 0)) == NULL) {
        return NULL;
    }
    f->batch_result = Py_NewRef(batch_result);
    f->offset_delta = offset_delta;
    f->key_size = key_size;
    f->value_size = value_size;
    f->timestamp = timestamp;
    f->given = NULL;
    if (reused)
        PyObject_GC_Track(f); /* tp_alloc tracks */
    return (PyObject *)f;
}

static PyObject *
RecordFuture_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"batch_result",          "offset_delta", "serialized_key_size",
                             "serialized_value_size", "timestamp",    NULL};
    PyObject *batch_result, *given[4];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOO:FutureRecordMetadata", kwlist,
                                     &batch_result, &given[0], &given[1], &given[2], &given[3]))
        return NULL;
    long long ints[4] = {0, 0, 0, 0};
    int plain = 1;
    for (int i = 0; i < 4 && plain; i++) {
        int overflow = 0;
        if (PyLong_CheckExact(given[i]))
            ints[i] = PyLong_AsLongLongAndOverflow(given[i], &overflow);
        plain = PyLong_CheckExact(given[i]) && !overflow;
    }
    RecordFuture *f = (RecordFuture *)future_make(type, batch_result, ints[0], ints[1],
                                                  ints[2], ints[3]);
    if (f != NULL && !plain &&
        (f->given = PyTuple_Pack(4, given[0], given[1], given[2], given[3])) == NULL)
        Py_CLEAR(f);
    return (PyObject *)f;
}

static int
RecordFuture_traverse(RecordFuture *self, visitproc visit, void *arg)
{
    /* A subtype's own reference to its type is visited by subtype_traverse. */
    Py_VISIT(self->batch_result);
    Py_VISIT(self->given);
    return 0;
}

static int
RecordFuture_clear(RecordFuture *self)
{
    Py_CLEAR(self->batch_result);
    Py_CLEAR(self->given);
    return 0;
}

/* The dealloc of RecordFutureType and of a registered subtype (in place of subtype_dealloc:
 * such a subtype adds no slots, __dict__, __weakref__ or finalizer, see
 * register_future_type). Also reached through subtype_dealloc from other subclasses, which
 * drops the instance's reference to its type itself when the nearest base with this dealloc
 * is RecordFutureType (a static type), and leaves it to this dealloc when that base is a
 * registered (heap) subtype. */
static void
RecordFuture_dealloc(RecordFuture *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyTypeObject *own = type;
    while (own->tp_dealloc != (destructor)RecordFuture_dealloc)
        own = own->tp_base;
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->batch_result);
    Py_CLEAR(self->given);
    if (future_free_count < FUTURE_FREE_MAX && type->tp_dealloc == (destructor)RecordFuture_dealloc)
        future_free[future_free_count++] = (PyObject *)self;
    else
        type->tp_free((PyObject *)self);
    if (own->tp_flags & Py_TPFLAGS_HEAPTYPE)
        Py_DECREF(type);
}

/* Field i (0: offset_delta, 1: key size, 2: value size, 3: timestamp) as Python sees it. */
static PyObject *
future_field(RecordFuture *self, int i)
{
    if (self->given != NULL)
        return Py_NewRef(PyTuple_GET_ITEM(self->given, i));
    long long value = i == 0   ? self->offset_delta
                      : i == 1 ? self->key_size
                      : i == 2 ? self->value_size
                               : self->timestamp;
    return PyLong_FromLongLong(value);
}

static PyObject *
RecordFuture_get_field(RecordFuture *self, void *closure)
{
    return future_field(self, (int)(intptr_t)closure);
}

static PyObject *
RecordFuture_get_batch_result(RecordFuture *self, void *Py_UNUSED(closure))
{
    if (self->batch_result == NULL) { /* cleared by the GC, breaking a cycle */
        PyErr_SetString(PyExc_AttributeError, "batch_result");
        return NULL;
    }
    return Py_NewRef(self->batch_result);
}

static PyObject *
RecordFuture_reduce(RecordFuture *self, PyObject *Py_UNUSED(ignored))
{
    /* As the pure build's NamedTuple: copy.copy() gives a new handle on the same result;
     * pickling fails on the result (its lock), as there. */
    PyObject *fields[4] = {NULL, NULL, NULL, NULL};
    PyObject *reduced = NULL;
    for (int i = 0; i < 4; i++)
        if ((fields[i] = future_field(self, i)) == NULL)
            goto done;
    reduced = Py_BuildValue("O(OOOOO)", Py_TYPE(self),
                            self->batch_result ? self->batch_result : Py_None, fields[0],
                            fields[1], fields[2], fields[3]);
done:
    for (int i = 0; i < 4; i++)
        Py_XDECREF(fields[i]);
    return reduced;
}

static PyMethodDef RecordFuture_methods[] = {
    {"__reduce__", (PyCFunction)RecordFuture_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef RecordFuture_getset[] = {
    {"batch_result", (getter)RecordFuture_get_batch_result, NULL,
     "The ProduceRequestResult of the batch the record was appended to.", NULL},
    {"offset_delta", (getter)RecordFuture_get_field, NULL,
     "The record's offset delta in that batch.", (void *)0},
    {"serialized_key_size", (getter)RecordFuture_get_field, NULL,
     "The key's size in bytes, -1 without key.", (void *)1},
    {"serialized_value_size", (getter)RecordFuture_get_field, NULL,
     "The value's size in bytes, -1 without value.", (void *)2},
    {"timestamp", (getter)RecordFuture_get_field, NULL,
     "The record's timestamp (ms since the epoch).", (void *)3},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RecordFutureType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkaline._record_core.RecordFuture",
    .tp_doc = "The fields of a record's future; see kafkaline.producer.FutureRecordMetadata.",
    .tp_basicsize = sizeof(RecordFuture),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = RecordFuture_new,
    .tp_dealloc = (destructor)RecordFuture_dealloc,
    .tp_traverse = (traverseproc)RecordFuture_traverse,
    .tp_clear = (inquiry)RecordFuture_clear,
    .tp_methods = RecordFuture_methods,
    .tp_getset = RecordFuture_getset,
};

/* register_future_type(cls): cls, a direct Python subclass of RecordFuture adding only
 * methods (`__slots__ = ()`), gets RecordFuture's dealloc instead of subtype_dealloc (which
 * would look for the slots, dict, weakrefs and finalizer it does not have). */
static PyObject *
core_register_future_type(PyObject *Py_UNUSED(module), PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "register_future_type() takes a class, not %.200s",
                     Py_TYPE(cls)->tp_name);
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    if (type->tp_base != &RecordFutureType || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        type->tp_basicsize != sizeof(RecordFuture) || type->tp_itemsize != 0 ||
        type->tp_dictoffset != 0 || type->tp_weaklistoffset != 0 || type->tp_finalize != NULL ||
        type->tp_del != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "register_future_type() takes a direct subclass of RecordFuture with "
                     "__slots__ = () and no finalizer, not %.200s",
                     type->tp_name);
        return NULL;
    }
    type->tp_dealloc = (destructor)RecordFuture_dealloc;
    Py_RETURN_NONE;
}
