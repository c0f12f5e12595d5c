/* kafkaline._record_core: murmur2 partitioning for Python, and send_batch() over Python lists.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ------------------------------------------------------------------------ module */

static PyObject *
core_murmur2(PyObject *Py_UNUSED(module), PyObject *arg)
{
    BytesArg data;
    if (bytes_arg(arg, "data", &data) < 0)
        return NULL;
    int32_t h = murmur2((const unsigned char *)data.data, data.size);
    bytes_arg_release(&data);
    return PyLong_FromLong(h);
}

static PyObject *
core_partition_for_key(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_for_key() takes key, partition_count");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    if (count <= 0) {
        PyErr_Format(PyExc_ValueError, "partition_count %zd must be positive", count);
        return NULL;
    }
    BytesArg data;
    if (bytes_arg(args[0], "key", &data) < 0)
        return NULL;
    int32_t h = murmur2((const unsigned char *)data.data, data.size);
    bytes_arg_release(&data);
    return PyLong_FromSsize_t((Py_ssize_t)((uint32_t)h & 0x7fffffffu) % count);
}

/* ---------------------------------------------------------- send_batch() over Python lists */

/* One record's headers, if usual (None, or a list or tuple of (str, bytes or None) tuples):
 * 1 and *bound the Python check's bound of their encoded size (validation.headers_size_bound,
 * 0 for none), else 0. */
static int
usual_headers(PyObject *headers, Py_ssize_t *bound)
{
    *bound = 0;
    if (headers == Py_None)
        return 1;
    if (!PyList_CheckExact(headers) && !PyTuple_CheckExact(headers))
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(headers);
    PyObject **items = PySequence_Fast_ITEMS(headers);
    Py_ssize_t size = n ? 5 : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = items[i];
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            return 0;
        PyObject *name = PyTuple_GET_ITEM(pair, 0), *value = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(name) || (value != Py_None && !PyBytes_CheckExact(value)))
            return 0;
        Py_ssize_t name_size;
        if (PyUnicode_AsUTF8AndSize(name, &name_size) == NULL) {
            PyErr_Clear(); /* not UTF-8: the Python check names it */
            return 0;
        }
        size += 10 + name_size + (value == Py_None ? 0 : PyBytes_GET_SIZE(value));
    }
    *bound = size;
    return 1;
}

/* Whether send_batch()'s lists are the usual ones, taken whole by the core: values a list,
 * keys and headers None or lists as long, every key and value bytes or None, every record's
 * headers usual (see usual_headers), every record within payload_limit (key, value and
 * headers bound, as the Python checks count them). False says "not mine": the Python checks
 * run and name the bad index. */
static PyObject *
core_lists_accepted(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "lists_accepted() takes values, keys, headers, payload_limit");
        return NULL;
    }
    PyObject *values = args[0], *keys = args[1], *headers = args[2];
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(values))
        Py_RETURN_FALSE;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if ((keys != Py_None && (!PyList_CheckExact(keys) || PyList_GET_SIZE(keys) != n)) ||
        (headers != Py_None && (!PyList_CheckExact(headers) || PyList_GET_SIZE(headers) != n)))
        Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        Py_ssize_t size = 0, header_size = 0;
        if (value != Py_None) {
            if (!PyBytes_CheckExact(value))
                Py_RETURN_FALSE;
            size = PyBytes_GET_SIZE(value);
        }
        PyObject *key = keys == Py_None ? Py_None : PyList_GET_ITEM(keys, i);
        if (key != Py_None) {
            if (!PyBytes_CheckExact(key))
                Py_RETURN_FALSE;
            size += PyBytes_GET_SIZE(key);
        }
        if (headers != Py_None && !usual_headers(PyList_GET_ITEM(headers, i), &header_size))
            Py_RETURN_FALSE;
        if (size + header_size > limit)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* A record's partition: the given one, else murmur2 of its key, else `count` (the sticky
 * partitioner's, decided per batch by the accumulator). */
static Py_ssize_t
chosen_partition(PyObject *given, PyObject *key, Py_ssize_t count)
{
    if (given != NULL && given != Py_None) {
        Py_ssize_t p = PyLong_AsSsize_t(given);
        if (p == -1 && PyErr_Occurred())
            return -1;
        if (p < 0 || p >= count) {
            PyErr_Format(PyExc_ValueError, "partition %zd is outside 0..%zd", p, count - 1);
            return -1;
        }
        return p;
    }
    if (key == Py_None)
        return count;
    if (PyBytes_CheckExact(key)) {
        uint32_t h = (uint32_t)murmur2((const unsigned char *)PyBytes_AS_STRING(key),
                                       PyBytes_GET_SIZE(key));
        return (Py_ssize_t)(h & 0x7fffffffu) % count;
    }
    BytesArg data;
    if (bytes_arg(key, "key", &data) < 0)
        return -1;
    uint32_t h = (uint32_t)murmur2((const unsigned char *)data.data, data.size);
    bytes_arg_release(&data);
    return (Py_ssize_t)(h & 0x7fffffffu) % count;
}

/* bytes holding `n` Py_ssize_t as a memoryview of format 'n' (a sequence of ints). */
static PyObject *
positions_view(PyObject *bytes)
{
    PyObject *raw = PyMemoryView_FromObject(bytes);
    if (raw == NULL)
        return NULL;
    PyObject *view = PyObject_CallMethod(raw, "cast", "s", "n");
    Py_DECREF(raw);
    return view;
}

/* group_positions()'s count and partition_count, and keys and partitions as fast sequences
 * (NULL for None), each of one item per record. */
static int
group_args(PyObject *const *args, Py_ssize_t *n, Py_ssize_t *count, PyObject **kseq,
           PyObject **pseq)
{
    *kseq = *pseq = NULL;
    *n = PyLong_AsSsize_t(args[0]);
    *count = PyLong_AsSsize_t(args[3]);
    if ((*n == -1 || *count == -1) && PyErr_Occurred())
        return -1;
    if (*count <= 0 || *n < 0) {
        PyErr_Format(PyExc_ValueError, "count %zd and partition_count %zd: must be >= 0 and > 0",
                     *n, *count);
        return -1;
    }
    if (args[1] != Py_None &&
        (*kseq = PySequence_Fast(args[1], "keys must be a sequence")) == NULL)
        return -1;
    if (args[2] != Py_None &&
        (*pseq = PySequence_Fast(args[2], "partitions must be a sequence")) == NULL)
        return -1;
    if ((*kseq && PySequence_Fast_GET_SIZE(*kseq) != *n) ||
        (*pseq && PySequence_Fast_GET_SIZE(*pseq) != *n)) {
        PyErr_SetString(PyExc_ValueError, "keys and partitions must have one item per record");
        return -1;
    }
    return 0;
}

/* Each record's partition in chosen[], and how many each partition (count: sticky) has. */
static int
choose_partitions(PyObject *kseq, PyObject *pseq, Py_ssize_t n, Py_ssize_t count,
                  Py_ssize_t *chosen, Py_ssize_t *sizes)
{
    PyObject **k = kseq ? PySequence_Fast_ITEMS(kseq) : NULL;
    PyObject **given = pseq ? PySequence_Fast_ITEMS(pseq) : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        chosen[i] = chosen_partition(given ? given[i] : NULL, k ? k[i] : Py_None, count);
        if (chosen[i] < 0)
            return -1;
        sizes[chosen[i]]++;
    }
    return 0;
}

/* A bytes object of positions per partition that has records, in input order. */
static int
fill_groups(PyObject **groups, Py_ssize_t *sizes, const Py_ssize_t *chosen, Py_ssize_t n,
            Py_ssize_t count)
{
    for (Py_ssize_t p = 0; p <= count; p++) {
        if (sizes[p] == 0)
            continue;
        groups[p] = PyBytes_FromStringAndSize(NULL, sizes[p] * (Py_ssize_t)sizeof(Py_ssize_t));
        if (groups[p] == NULL)
            return -1;
        sizes[p] = 0; /* from here on: positions written */
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t p = chosen[i];
        ((Py_ssize_t *)PyBytes_AS_STRING(groups[p]))[sizes[p]++] = i;
    }
    return 0;
}

/* [(partition or None, positions view), ...] for the partitions that have records. */
static PyObject *
groups_list(PyObject **groups, Py_ssize_t count)
{
    PyObject *result = PyList_New(0);
    if (result == NULL)
        return NULL;
    for (Py_ssize_t p = 0; p <= count; p++) {
        if (groups[p] == NULL)
            continue;
        PyObject *view = positions_view(groups[p]);
        PyObject *group = view == NULL ? NULL
                          : p == count ? PyTuple_Pack(2, Py_None, view)
                                       : Py_BuildValue("(nO)", p, view);
        Py_XDECREF(view);
        if (group == NULL || PyList_Append(result, group) < 0) {
            Py_XDECREF(group);
            Py_DECREF(result);
            return NULL;
        }
        Py_DECREF(group);
    }
    return result;
}

/* The input positions per partition, in input order, for the partitions send() would choose
 * (see chosen_partition); keys and partitions: None or one per record. */
static PyObject *
core_group_positions(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "group_positions() takes count, keys, partitions, partition_count");
        return NULL;
    }
    Py_ssize_t n, count = 0;
    PyObject *kseq, *pseq, *result = NULL, **groups = NULL;
    Py_ssize_t *chosen = NULL, *sizes = NULL;
    if (group_args(args, &n, &count, &kseq, &pseq) < 0)
        goto done;
    chosen = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    sizes = PyMem_Calloc((size_t)count + 1, sizeof(Py_ssize_t));
    groups = PyMem_Calloc((size_t)count + 1, sizeof(PyObject *));
    if (chosen == NULL || sizes == NULL || groups == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (choose_partitions(kseq, pseq, n, count, chosen, sizes) == 0 &&
        fill_groups(groups, sizes, chosen, n, count) == 0)
        result = groups_list(groups, count);
done:
    if (groups != NULL)
        for (Py_ssize_t p = 0; p <= count; p++)
            Py_XDECREF(groups[p]);
    PyMem_Free(groups);
    PyMem_Free(sizes);
    PyMem_Free(chosen);
    Py_XDECREF(kseq);
    Py_XDECREF(pseq);
    return result;
}

static PyObject *
core_crc32c(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32c() takes data[, crc]");
        return NULL;
    }
    unsigned long crc = 0;
    if (nargs == 2) {
        crc = PyLong_AsUnsignedLong(args[1]);
        if (crc == (unsigned long)-1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    uint32_t result = crc32c((uint32_t)crc, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(result);
}
