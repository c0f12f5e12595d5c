/* kafkaline._record_core: send()'s common case: the lookups it keeps between calls.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* call_lock() of a lock other than a QueueLock: its type's acquire or release. */
static int
call_other_lock(OpenBatchSender *self, PyObject *lock, int acquire)
{
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

/* The lock's acquire or release method called on it: 0, or -1 with an exception set.
 * acquire() blocks with the GIL released, as in the general path's lock.acquire(). A
 * QueueLock's free case is a flag, inlined: twice per send. */
static inline int
call_lock(OpenBatchSender *self, PyObject *lock, int acquire)
{
    if (!Py_IS_TYPE(lock, &QueueLockType))
        return call_other_lock(self, lock, acquire);
    QueueLock *q = (QueueLock *)lock;
    if (acquire)
        return queue_lock_take(q, -1) < 0 ? -1 : 0;
    queue_lock_give(q); /* taken above by this call, so held */
    return 0;
}

/* obj.name (a new reference, or NULL with an exception set), through the cache when it is
 * a __slots__ member of obj's type. The type's member descriptor is found as
 * type(obj).name, which is also what obj.name finds first (a data descriptor). */
static PyObject *
read_slot_slow(PyObject *obj, PyObject *name, SlotCache *cache)
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

/* read_slot_slow()'s common case, inlined: four of these per send. */
static inline PyObject *
read_slot(PyObject *obj, PyObject *name, SlotCache *cache)
{
    if (Py_TYPE(obj) == cache->type && cache->offset >= 0) {
        PyObject *value = *(PyObject **)((char *)obj + cache->offset);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return read_slot_slow(obj, name, cache);
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
accumulator_attr(OpenBatchSender *self, PyObject *name)
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

static int plain_int(PyObject *obj, long long hi, long long *out);

static void
topic_cache_clear(OpenBatchSender *self)
{
    for (Py_ssize_t i = 0; i < self->cache_size; i++)
        Py_CLEAR(self->cache_queue[i]);
    PyMem_Free(self->cache_queue);
    self->cache_queue = NULL;
    self->cache_size = 0;
    Py_CLEAR(self->cache_topic);
    Py_CLEAR(self->cache_sticky);
    self->cache_count = -1;
}

/* Makes the cache the topic's (a str). What it keeps needs no check per send: the producer
 * only adds topics to partition_counts between replacing it (a new one forgets the count),
 * and the accumulator makes each queue and sticky partitioner once and never replaces or
 * removes one (partition_queues.py). What was not found is not kept, so a queue or count
 * that appears meanwhile (another thread's) is found by the next send. */
static void
topic_cache_select(OpenBatchSender *self, PyObject *topic)
{
    if (topic == self->cache_topic ||
        (self->cache_topic != NULL && PyUnicode_Compare(topic, self->cache_topic) == 0))
        return; /* two exact str: no error, no Python code */
    topic_cache_clear(self);
    self->cache_topic = Py_NewRef(topic);
}

/* The cached topic's partition count: > 0, 0 when there is none to use, -1 on error. */
static long long
cached_count(OpenBatchSender *self, PyObject *topic)
{
    if (self->cache_count >= 0)
        return self->cache_count;
    PyObject *count_obj = PyDict_GetItemWithError(self->partition_counts, topic);
    long long count;
    if (count_obj == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (plain_int(count_obj, PY_SSIZE_T_MAX, &count) || count == 0)
        return 0;
    self->cache_count = count;
    return count;
}

/* The cached topic's queue of the partition (a new reference; NULL, maybe with an exception
 * set, when there is none), kept by partition below max(count, 64), at most QUEUES_KEPT. */
#define QUEUES_KEPT 65536
static PyObject *
cached_queue(OpenBatchSender *self, PyObject *topic, long long partition, long long count)
{
    if (partition >= self->cache_size && self->cache_size < count &&
        self->cache_size < QUEUES_KEPT) {
        Py_ssize_t size = count < 64 ? 64 : count > QUEUES_KEPT ? QUEUES_KEPT : (Py_ssize_t)count;
        PyObject **grown = PyMem_Calloc((size_t)size, sizeof(PyObject *));
        if (grown != NULL) {
            for (Py_ssize_t i = 0; i < self->cache_size; i++)
                grown[i] = self->cache_queue[i];
            PyMem_Free(self->cache_queue);
            self->cache_queue = grown;
            self->cache_size = size;
        }
    }
    if (partition < self->cache_size && self->cache_queue[partition] != NULL)
        return Py_NewRef(self->cache_queue[partition]);
    PyObject *queues = accumulator_attr(self, str_queues);
    if (queues == NULL)
        return NULL;
    PyObject *by_partition = PyDict_Check(queues) ? PyDict_GetItemWithError(queues, topic) : NULL;
    PyObject *queue = NULL;
    if (by_partition != NULL && PyDict_Check(by_partition)) {
        PyObject *number = PyLong_FromLongLong(partition);
        if (number != NULL) {
            queue = PyDict_GetItemWithError(by_partition, number);
            Py_XINCREF(queue);
            Py_DECREF(number);
        }
    }
    Py_DECREF(queues);
    if (queue != NULL && partition < self->cache_size)
        self->cache_queue[partition] = Py_NewRef(queue);
    return queue;
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
