/* kafkaline._record_core: produce response decoding.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ------------------------------------------------------------------------------------------
 * Produce response decoding (the I/O thread's fast path; kafkaline.protocol.api.produce's
 * _decode_usual_flexible is the reference, and a test requires equal objects from both).
 *
 * A v9+ ProduceResponse body in its usual shape:
 *   topics          compact count (uvarint n + 1, at most three bytes here)
 *     name          compact string (length likewise), UTF-8
 *     partitions    compact count
 *       index int32, error_code int16, base_offset int64, log_append_time_ms int64,
 *       log_start_offset int64, record_errors 0x01 (empty), error_message 0x00 (null),
 *       tagged fields 0x00 (none)
 *     tagged fields 0x00
 *   throttle_time_ms int32, tagged fields 0x00, and nothing after.
 * Anything else gives None (the generic decoder then decides, and names what is wrong).
 * ------------------------------------------------------------------------------------------ */

enum {
    PR_INDEX, PR_ERROR_CODE, PR_BASE_OFFSET, PR_LOG_APPEND_TIME, PR_LOG_START_OFFSET,
    PR_RECORD_ERRORS, PR_ERROR_MESSAGE, PR_CURRENT_LEADER, PR_LEADER_ID, PR_LEADER_EPOCH,
    PR_NAME, PR_PARTITION_RESPONSES, PR_NAME_COUNT
};
static PyObject *pr_names[PR_NAME_COUNT];
static PyObject *pr_str_responses, *pr_str_throttle, *pr_str_node_endpoints, *pr_empty_tuple;

static int
pr_init_names(void)
{
    static const char *const names[PR_NAME_COUNT] = {
        "index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset",
        "record_errors", "error_message", "current_leader", "leader_id", "leader_epoch",
        "name", "partition_responses"};
    if (pr_empty_tuple != NULL)
        return 0;
    for (int i = 0; i < PR_NAME_COUNT; i++)
        if ((pr_names[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    if ((pr_str_responses = PyUnicode_InternFromString("responses")) == NULL ||
        (pr_str_throttle = PyUnicode_InternFromString("throttle_time_ms")) == NULL ||
        (pr_str_node_endpoints = PyUnicode_InternFromString("node_endpoints")) == NULL ||
        (pr_empty_tuple = PyTuple_New(0)) == NULL)
        return -1;
    return 0;
}

/* A compact count of at most three bytes at *pos: n (-1 for null or a longer varint, as the
 * reference), -2 if the data ends first. */
static Py_ssize_t
pr_read_count(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos)
{
    Py_ssize_t value = 0;
    for (int i = 0; i < 3; i++) {
        if (*pos + i >= end)
            return -2;
        unsigned char byte = data[*pos + i];
        value |= (Py_ssize_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            *pos += i + 1;
            return value - 1;
        }
    }
    return -1;
}

static int64_t
pr_int(const unsigned char *p, int size)
{
    uint64_t value = 0;
    for (int i = 0; i < size; i++)
        value = (value << 8) | p[i];
    if (size < 8 && (value >> (8 * size - 1)))
        value |= ~(uint64_t)0 << (8 * size); /* sign-extend */
    return (int64_t)value;
}

/* object.__new__(cls): the fields are set one by one after it, as the reference does. */
static PyObject *
pr_new(PyObject *cls)
{
    return PyBaseObject_Type.tp_new((PyTypeObject *)cls, pr_empty_tuple, NULL);
}

/* Set obj.name = value, stealing value (NULL: its allocation failed, -1 returned). */
static int
pr_set(PyObject *obj, PyObject *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyObject_SetAttr(obj, name, value);
    Py_DECREF(value);
    return rc;
}

/* Where the slot of a field is in its class's objects, or -1: setattr's own lookup (the
 * type's MRO, the descriptor, interning the name) cost more than the rest of a partition's
 * decoding, and a response has one object per partition. Only a plain writable object slot
 * of a class with the default __setattr__ qualifies; anything else goes through pr_set. */
static Py_ssize_t
pr_slot_offset(PyObject *cls, PyObject *name)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    if (type->tp_setattro != PyObject_GenericSetAttr)
        return -1;
    PyObject *descr = _PyType_Lookup(type, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY))
        return -1;
    return member->offset;
}

/* A class's version tag, 0 when it has none (changing a class changes its tag, so an
 * offset found under one tag holds while the class keeps it). */
static unsigned int
pr_version(PyObject *cls)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    return (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
}

/* The slot offsets of the four classes' fields, found again when another class comes (or
 * one of them changed). */
enum { PR_CLASS_RESPONSE, PR_CLASS_TOPIC, PR_CLASS_PARTITION, PR_CLASS_LEADER, PR_CLASS_COUNT };
static PyObject *pr_cached_class[PR_CLASS_COUNT];
static unsigned int pr_cached_version[PR_CLASS_COUNT];
static Py_ssize_t pr_offset[PR_NAME_COUNT];
static Py_ssize_t pr_offset_responses, pr_offset_throttle, pr_offset_node_endpoints;

static void
pr_find_offsets(PyObject *const *classes)
{
    int same = 1;
    for (int i = 0; i < PR_CLASS_COUNT; i++)
        same &= pr_cached_class[i] == classes[i] && pr_cached_version[i] != 0 &&
                pr_cached_version[i] == pr_version(classes[i]);
    if (same)
        return;
    for (int i = 0; i < PR_CLASS_COUNT; i++)
        Py_XSETREF(pr_cached_class[i], Py_NewRef(classes[i]));
    PyObject *partition = classes[PR_CLASS_PARTITION], *leader = classes[PR_CLASS_LEADER];
    PyObject *topic = classes[PR_CLASS_TOPIC], *response = classes[PR_CLASS_RESPONSE];
    for (int i = PR_INDEX; i <= PR_CURRENT_LEADER; i++)
        pr_offset[i] = pr_slot_offset(partition, pr_names[i]);
    pr_offset[PR_LEADER_ID] = pr_slot_offset(leader, pr_names[PR_LEADER_ID]);
    pr_offset[PR_LEADER_EPOCH] = pr_slot_offset(leader, pr_names[PR_LEADER_EPOCH]);
    pr_offset[PR_NAME] = pr_slot_offset(topic, pr_names[PR_NAME]);
    pr_offset[PR_PARTITION_RESPONSES] = pr_slot_offset(topic, pr_names[PR_PARTITION_RESPONSES]);
    pr_offset_responses = pr_slot_offset(response, pr_str_responses);
    pr_offset_throttle = pr_slot_offset(response, pr_str_throttle);
    pr_offset_node_endpoints = pr_slot_offset(response, pr_str_node_endpoints);
    /* Read after the lookups, which give a class its tag if it had none. */
    for (int i = 0; i < PR_CLASS_COUNT; i++)
        pr_cached_version[i] = pr_version(classes[i]);
}

/* pr_set() into the slot at offset when there is one (obj was just made: the slot is empty
 * or holds what an earlier store put there). */
static int
pr_store(PyObject *obj, Py_ssize_t offset, PyObject *name, PyObject *value)
{
    if (offset < 0)
        return pr_set(obj, name, value);
    if (value == NULL)
        return -1;
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_XSETREF(*slot, value);
    return 0;
}

#define PR_STORE(obj, field, value) pr_store((obj), pr_offset[field], pr_names[field], (value))

/* The read steps below return 1 when their part is in the usual shape (read, appended), 0 when
 * it is not (the caller answers None and the Python decoder reads the body), -1 on error. */

/* A partition's fixed fields (33 bytes: the usual shape has no errors and no tagged fields)
 * as a partition_type object appended to partitions. */
static inline int
pr_read_partition(const unsigned char *fixed, PyObject *partition_type, PyObject *leader,
                  PyObject *partitions)
{
    PyObject *obj = pr_new(partition_type);
    if (obj == NULL || PR_STORE(obj, PR_INDEX, PyLong_FromLongLong(pr_int(fixed, 4))) < 0 ||
        PR_STORE(obj, PR_ERROR_CODE, PyLong_FromLongLong(pr_int(fixed + 4, 2))) < 0 ||
        PR_STORE(obj, PR_BASE_OFFSET, PyLong_FromLongLong(pr_int(fixed + 6, 8))) < 0 ||
        PR_STORE(obj, PR_LOG_APPEND_TIME, PyLong_FromLongLong(pr_int(fixed + 14, 8))) < 0 ||
        PR_STORE(obj, PR_LOG_START_OFFSET, PyLong_FromLongLong(pr_int(fixed + 22, 8))) < 0 ||
        PR_STORE(obj, PR_RECORD_ERRORS, PyList_New(0)) < 0 ||
        PR_STORE(obj, PR_ERROR_MESSAGE, Py_NewRef(Py_None)) < 0 ||
        PR_STORE(obj, PR_CURRENT_LEADER, Py_NewRef(leader)) < 0 ||
        PyList_Append(partitions, obj) < 0) {
        Py_XDECREF(obj);
        return -1;
    }
    Py_DECREF(obj);
    return 1;
}

/* A topic's partitions after its name: a list of partition_type objects in *out. */
static int
pr_read_partitions(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos,
                   PyObject *partition_type, PyObject *leader_type, PyObject **out)
{
    Py_ssize_t partition_count = pr_read_count(data, end, pos);
    if (partition_count < 0)
        return 0;
    /* One default current_leader per topic, shared by its partitions (as the reference). */
    PyObject *leader = pr_new(leader_type), *partitions = NULL;
    int status = -1;
    if (leader == NULL || PR_STORE(leader, PR_LEADER_ID, PyLong_FromLong(-1)) < 0 ||
        PR_STORE(leader, PR_LEADER_EPOCH, PyLong_FromLong(-1)) < 0 ||
        (partitions = PyList_New(0)) == NULL)
        goto done;
    Py_ssize_t at = *pos;
    for (Py_ssize_t p = 0; p < partition_count; p++, at += 33) {
        status = 0;
        if (end - at < 33 || data[at + 30] != 0x01 || data[at + 31] != 0x00 ||
            data[at + 32] != 0x00)
            goto done;
        status = pr_read_partition(data + at, partition_type, leader, partitions);
        if (status < 0)
            goto done;
    }
    *pos = at;
    status = 1;
    *out = Py_NewRef(partitions);
done:
    Py_XDECREF(partitions);
    Py_XDECREF(leader);
    return status;
}

static int
pr_read_topic(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos,
              PyObject *const *types, PyObject *topics)
{
    Py_ssize_t name_size = pr_read_count(data, end, pos);
    if (name_size < 0 || *pos + name_size > end)
        return 0;
    PyObject *name = PyUnicode_DecodeUTF8((const char *)data + *pos, name_size, NULL);
    if (name == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    *pos += name_size;
    PyObject *partitions = NULL, *topic = NULL;
    int status = pr_read_partitions(data, end, pos, types[2], types[3], &partitions);
    if (status <= 0)
        goto done;
    status = 0;
    if (*pos >= end || data[*pos] != 0) /* the topic's tagged fields */
        goto done;
    *pos += 1;
    status = -1;
    if ((topic = pr_new(types[1])) == NULL)
        goto done;
    int stored = PR_STORE(topic, PR_NAME, name); /* takes name, stored or not */
    name = NULL;
    if (stored < 0 || PR_STORE(topic, PR_PARTITION_RESPONSES, Py_NewRef(partitions)) < 0 ||
        PyList_Append(topics, topic) < 0)
        goto done;
    status = 1;
done:
    Py_XDECREF(topic);
    Py_XDECREF(partitions);
    Py_XDECREF(name);
    return status;
}

/* The body as types[0] (the response class), None when it is not in the usual shape. */
static PyObject *
pr_read_response(const unsigned char *data, Py_ssize_t end, PyObject *const *types)
{
    Py_ssize_t pos = 0;
    PyObject *topics = NULL, *result = NULL;
    int status = 0;
    Py_ssize_t topic_count = pr_read_count(data, end, &pos);
    if (topic_count < 0)
        goto done;
    status = -1;
    if ((topics = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t t = 0; t < topic_count; t++) {
        status = pr_read_topic(data, end, &pos, types, topics);
        if (status <= 0)
            goto done;
    }
    status = 0;
    if (end - pos != 5 || data[pos + 4] != 0) /* throttle, no tagged fields, nothing after */
        goto done;
    status = -1;
    if ((result = pr_new(types[0])) == NULL ||
        pr_store(result, pr_offset_responses, pr_str_responses, Py_NewRef(topics)) < 0 ||
        pr_store(result, pr_offset_throttle, pr_str_throttle,
                 PyLong_FromLongLong(pr_int(data + pos, 4))) < 0 ||
        pr_store(result, pr_offset_node_endpoints, pr_str_node_endpoints, PyList_New(0)) < 0) {
        Py_CLEAR(result);
        goto done;
    }
    status = 1;
done:
    Py_XDECREF(topics);
    return status == 0 ? Py_NewRef(Py_None) : result;
}

static PyObject *
core_decode_produce_response(PyObject *Py_UNUSED(module), PyObject *const *args,
                             Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_produce_response() takes data, response_type, topic_type, "
                        "partition_type, leader_type");
        return NULL;
    }
    if (pr_init_names() < 0)
        return NULL;
    for (int i = 1; i < 5; i++)
        if (!PyType_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "decode_produce_response(): argument %d must be a "
                         "class, not %.100s", i + 1, Py_TYPE(args[i])->tp_name);
            return NULL;
        }
    pr_find_offsets(args + 1);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    /* the classes in args[1:]: response, topic, partition, leader */
    PyObject *result = pr_read_response(view.buf, view.len, args + 1);
    PyBuffer_Release(&view);
    return result;
}
