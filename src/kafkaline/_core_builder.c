/* kafkaline._record_core: the record batch builder: its buffer and life cycle.
 * A part of _record_core.c, which #includes the parts in order as one translation unit. */

/* ----------------------------------------------------------------------- the builder */

typedef struct {
    PyObject_HEAD
    PyObject *buffer;          /* bytes: header room + records; NULL once compressed */
    Py_ssize_t used;           /* bytes of buffer in use, header room included */
    Py_ssize_t capacity;
    int64_t count;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int closed;
    int sealed;
    int buffer_returned;       /* build_buffer() handed the buffer out: never change it */
    int has_log_append_time;
    int64_t log_append_time;
    Py_ssize_t size_limit;
    Py_ssize_t limit;          /* size_limit scaled by the compression ratio */
    Py_ssize_t memory_cap;     /* buffer memory the batch holds: the appender stays within */
    double ratio;
    PyObject *compression;     /* CompressionType member */
    long compression_id;
    PyObject *compression_level; /* None or int */
    int64_t base_offset;
    int32_t partition_leader_epoch;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int16_t attributes;
    PyObject *payload;         /* header room + compressed records, after seal() */
    Py_ssize_t uncompressed_size;
    PyObject *built;           /* cached build_buffer() result */
    PyObject *bad_timestamp;   /* str: why seal() must fail, for a timestamp outside int64 */
} Builder;

/* The buffer's next capacity for `need` bytes: small batches grow by doubling up to
 * GROWN_CAPACITY (a batch of a few small records stays small, as with many partitions);
 * past that, or at once when the first record is bigger than INITIAL_CAPACITY, it takes
 * the buffer memory its batch holds (memory_cap), up to the batch's limit: growing a large
 * batch by doubling copied it about once more, and a buffer much larger than the memory
 * held would let the process outgrow buffer_memory. */
static Py_ssize_t
builder_capacity_for(const Builder *self, Py_ssize_t need)
{
    Py_ssize_t capacity = self->capacity;
    if (capacity == 0 && need <= INITIAL_CAPACITY)
        return INITIAL_CAPACITY;
    if (capacity != 0 && capacity < GROWN_CAPACITY) {
        while (capacity < need && capacity < GROWN_CAPACITY)
            capacity *= 2;
        if (capacity >= need)
            return capacity;
    }
    Py_ssize_t target = self->memory_cap < self->limit ? self->memory_cap : self->limit;
    /* At least double (up to the limit): a pool smaller than batch_size tops a batch up by
     * what each record needs, and growing to just that would copy the batch every time. */
    Py_ssize_t doubled = capacity <= self->limit / 2 ? capacity * 2 : self->limit;
    if (target < doubled)
        target = doubled;
    return target > need ? target : need;
}

static int
builder_reserve(Builder *self, Py_ssize_t extra)
{
    Py_ssize_t need = self->used + extra;
    if (need <= self->capacity)
        return 0;
    Py_ssize_t capacity = builder_capacity_for(self, need);
    if (self->buffer == NULL) {
        self->buffer = PyBytes_FromStringAndSize(NULL, capacity);
        if (self->buffer == NULL)
            return -1;
    }
    else if (_PyBytes_Resize(&self->buffer, capacity) < 0) {
        return -1;
    }
    self->capacity = capacity;
    return 0;
}

static Py_ssize_t
records_room(Py_ssize_t size_limit, double ratio)
{
    return (Py_ssize_t)((double)(size_limit - HEADER_SIZE) / ratio);
}

/* The keywords a ProducerBatch gives every new builder, by their interned names. */
static PyObject *str_compression, *str_compression_level, *str_ratio, *str_is_transactional;

/* Those keywords read without PyArg_ParseTupleAndKeywords, which makes a str of each name it
 * looks up (about a thousand instructions a name, up to the last one given: most of making a
 * batch, and with many partitions a batch is made per record or two). 0 when every keyword
 * is one of them with a value of the usual type, else 1 and the general parse reads them. */
static int
builder_usual_kwargs(PyObject *kwds, PyObject **compression, PyObject **level, double *ratio,
                     int *transactional)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(kwds, &pos, &key, &value)) {
        if (key == str_compression)
            *compression = value;
        else if (key == str_compression_level)
            *level = value;
        else if (key == str_ratio && PyFloat_CheckExact(value))
            *ratio = PyFloat_AS_DOUBLE(value);
        else if (key == str_is_transactional && PyBool_Check(value))
            *transactional = value == Py_True;
        else
            return 1;
    }
    return 0;
}

/* RecordBatchBuilder()'s arguments; NULL where not given (the default applies). */
typedef struct {
    Py_ssize_t size_limit;
    PyObject *compression, *level, *base_offset, *ple;
    PyObject *producer_id, *producer_epoch, *base_sequence;
    PyObject *timestamp_type, *log_append_time;
    double ratio;
    int transactional, control;
} BuilderArgs;

static int
builder_parse_args(PyObject *args, PyObject *kwds, BuilderArgs *a)
{
    static char *kwlist[] = {"batch_size_limit", "compression", "compression_level",
                             "estimated_compression_ratio", "base_offset",
                             "partition_leader_epoch", "producer_id", "producer_epoch",
                             "base_sequence", "is_transactional", "is_control",
                             "timestamp_type", "log_append_time", NULL};
    *a = (BuilderArgs){.size_limit = 16384, .level = Py_None, .log_append_time = Py_None,
                       .ratio = 1.0};
    if (kwds != NULL && PyDict_CheckExact(kwds) && PyTuple_GET_SIZE(args) <= 1 &&
        builder_usual_kwargs(kwds, &a->compression, &a->level, &a->ratio, &a->transactional) ==
            0)
        return PyArg_ParseTuple(args, "|n:RecordBatchBuilder", &a->size_limit) ? 0 : -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n$OOdOOOOOppOO", kwlist, &a->size_limit,
                                     &a->compression, &a->level, &a->ratio, &a->base_offset,
                                     &a->ple, &a->producer_id, &a->producer_epoch,
                                     &a->base_sequence, &a->transactional, &a->control,
                                     &a->timestamp_type, &a->log_append_time))
        return -1;
    return 0;
}

/* The codec (a CompressionType member), its id and level, each checked by the Python side. */
static int
builder_set_compression(Builder *self, PyObject *compression, PyObject *level)
{
    PyObject *codec;
    if (compression == NULL || compression == compression_none) {
        codec = Py_NewRef(compression_none);
    }
    else {
        codec = PyObject_CallOneArg(compression_type_fn, compression);
        if (codec == NULL)
            return -1;
    }
    Py_XSETREF(self->compression, codec);
    self->compression_id = PyLong_AsLong(codec);
    if (self->compression_id == -1 && PyErr_Occurred())
        return -1;
    if (level != Py_None) {
        PyObject *checked = PyObject_CallFunctionObjArgs(resolve_level_fn, codec, level, NULL);
        if (checked == NULL)
            return -1;
        Py_DECREF(checked);
    }
    Py_XSETREF(self->compression_level, Py_NewRef(level));
    return 0;
}

static int
builder_check_size(Py_ssize_t size_limit, double ratio)
{
    if (!(size_limit > HEADER_SIZE && size_limit <= MAX_BATCH_SIZE)) {
        PyErr_Format(PyExc_ValueError, "batch_size_limit %zd is outside %d..%lld", size_limit,
                     HEADER_SIZE + 1, (long long)MAX_BATCH_SIZE);
        return -1;
    }
    if (!(ratio > 0.0 && ratio <= 1.0)) {
        PyObject *r = PyFloat_FromDouble(ratio);
        if (r != NULL) {
            PyErr_Format(PyExc_ValueError, "estimated_compression_ratio %R is outside (0, 1]", r);
            Py_DECREF(r);
        }
        return -1;
    }
    return 0;
}

/* Whether the batch is LOG_APPEND_TIME (1) or not (0), with its time; -1 on error. */
static int
builder_set_log_append(Builder *self, PyObject *timestamp_type, PyObject *log_append_time)
{
    self->has_log_append_time = 0;
    if (timestamp_type == NULL)
        return 0;
    long tt = PyLong_AsLong(timestamp_type);
    if (tt == -1 && PyErr_Occurred())
        return -1;
    if (tt != 1)
        return 0;
    long long lat;
    if (log_append_time == Py_None) {
        PyErr_SetString(PyExc_ValueError, "LOG_APPEND_TIME batches need log_append_time");
        return -1;
    }
    if (check_range("log_append_time", log_append_time, INT64_MIN, INT64_MAX, &lat) < 0)
        return -1;
    self->has_log_append_time = 1;
    self->log_append_time = lat;
    return 1;
}

/* An optional integer header field: `fallback` when not given, else checked to [lo, hi]. */
static inline int
builder_header_field(const char *name, PyObject *value, long long lo, long long hi,
                     long long fallback, long long *out)
{
    *out = fallback;
    return value == NULL ? 0 : check_range(name, value, lo, hi, out);
}

static int
builder_set_header_fields(Builder *self, const BuilderArgs *a)
{
    long long offset, ple, id, epoch, sequence;
    if (builder_header_field("base_offset", a->base_offset, INT64_MIN, INT64_MAX, 0,
                             &offset) < 0 ||
        builder_header_field("partition_leader_epoch", a->ple, INT32_MIN, INT32_MAX, -1,
                             &ple) < 0 ||
        builder_header_field("producer_id", a->producer_id, INT64_MIN, INT64_MAX, -1, &id) <
            0 ||
        builder_header_field("producer_epoch", a->producer_epoch, INT16_MIN, INT16_MAX, -1,
                             &epoch) < 0 ||
        builder_header_field("base_sequence", a->base_sequence, INT32_MIN, INT32_MAX, -1,
                             &sequence) < 0)
        return -1;
    self->base_offset = offset;
    self->partition_leader_epoch = (int32_t)ple;
    self->producer_id = id;
    self->producer_epoch = (int16_t)epoch;
    self->base_sequence = (int32_t)sequence;
    return 0;
}

/* A fresh builder set up from its arguments. */
static int
builder_setup(Builder *self, const BuilderArgs *a)
{
    if (builder_set_compression(self, a->compression, a->level) < 0 ||
        builder_check_size(a->size_limit, a->ratio) < 0)
        return -1;
    int log_append = builder_set_log_append(self, a->timestamp_type, a->log_append_time);
    if (log_append < 0)
        return -1;
    self->size_limit = a->size_limit;
    self->memory_cap = (Py_ssize_t)MAX_BATCH_SIZE;
    self->ratio = a->ratio;
    self->limit =
        a->ratio == 1.0 ? a->size_limit : HEADER_SIZE + records_room(a->size_limit, a->ratio);
    if (builder_set_header_fields(self, a) < 0)
        return -1;
    self->attributes = (int16_t)(self->compression_id | (log_append ? ATTR_TIMESTAMP_TYPE : 0) |
                                 (a->transactional ? ATTR_TRANSACTIONAL : 0) |
                                 (a->control ? ATTR_CONTROL : 0));
    self->used = HEADER_SIZE;
    self->capacity = 0;
    self->count = 0;
    self->closed = 0;
    self->sealed = 0;
    self->buffer_returned = 0;
    self->uncompressed_size = 0;
    return 0;
}

static int
Builder_init(Builder *self, PyObject *args, PyObject *kwds)
{
    BuilderArgs a;
    if (builder_parse_args(args, kwds, &a) < 0 || ensure_python_side() < 0)
        return -1;
    if (self->buffer != NULL || self->payload != NULL) {
        PyErr_SetString(PyExc_TypeError, "RecordBatchBuilder is initialised once");
        return -1;
    }
    return builder_setup(self, &a);
}

static PyTypeObject BuilderType;

/* RecordBatchBuilder(size_limit), made from C without a call: a new batch's usual builder
 * (the new-batch step's). */
static PyObject *
builder_make_plain(Py_ssize_t size_limit)
{
    if (ensure_python_side() < 0)
        return NULL;
    BuilderArgs a = {.size_limit = size_limit, .level = Py_None, .log_append_time = Py_None,
                     .ratio = 1.0};
    Builder *self = (Builder *)BuilderType.tp_alloc(&BuilderType, 0);
    if (self != NULL && builder_setup(self, &a) < 0)
        Py_CLEAR(self);
    return (PyObject *)self;
}

/* Not tracked by the cyclic GC: what a builder refers to (bytes, a str, a CompressionType
 * member, None or an int) never refers back to it, and a batch makes one per new batch, which
 * with many partitions is one per record or two (docs/performance.md, newbatch3). */
static void
Builder_dealloc(Builder *self)
{
    Py_CLEAR(self->buffer);
    Py_CLEAR(self->payload);
    Py_CLEAR(self->built);
    Py_CLEAR(self->bad_timestamp);
    Py_CLEAR(self->compression);
    Py_CLEAR(self->compression_level);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

