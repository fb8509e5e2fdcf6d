/* Typed JSON keys of tool calls: the compiled path of _calls.typed_key_python, byte for byte.
 *
 * typed_key(value) -> bytes, equal for two values exactly when they are equal as typed JSON:
 *   None      n
 *   bool      t | f                       (true is not 1)
 *   int       i<decimal>;                 (a float with an integral value too: 1 == 1.0)
 *   float     d<repr>;                    (the others: 0.5, inf, nan)
 *   str       s<utf-8 length>:<utf-8>     (lone surrogates kept, as "surrogatepass")
 *   list      [<items>]
 *   dict      {<key><value>...}           (entries sorted by their encoded key, then value)
 * Every item delimits itself, so no escaping is needed. Any other type (a tuple, a Mapping
 * that is not a dict, a subclass) is encoded by the Python function given to setup().
 *
 * call_keys(calls) -> [typed_key([name, arguments]) for each call], a call being a tuple
 * whose items 0 and 1 are its name and arguments (a ToolCall).
 *
 * distinct_counts(actual, expected) -> per row, the number of distinct call keys made,
 * expected and both (what tool_call_f1 and its precision and recall need), as int64 bytes.
 *
 * A key is one bytes object: cheap to hash, compare and free, and never tracked by the cycle
 * collector. Nesting is bounded by the row limits before keys are made; the recursion is
 * still guarded (Py_EnterRecursiveCall).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static PyObject *FALLBACK = NULL; /* value -> bytes, for the types not handled here */

#define INLINE_BYTES 512

/* Bytes being written: on the stack while they fit, on the heap beyond. */
typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char inline_[INLINE_BYTES];
} Buffer;

static void buffer_init(Buffer *buf) {
    buf->data = buf->inline_;
    buf->len = 0;
    buf->cap = INLINE_BYTES;
}

static void buffer_free(Buffer *buf) {
    if (buf->data != buf->inline_) {
        PyMem_Free(buf->data);
    }
    buffer_init(buf);
}

static int reserve(Buffer *buf, Py_ssize_t more) {
    if (buf->len + more <= buf->cap) {
        return 0;
    }
    Py_ssize_t cap = buf->cap;
    while (cap < buf->len + more) {
        cap *= 2;
    }
    char *grown = PyMem_Malloc((size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(grown, buf->data, (size_t)buf->len);
    if (buf->data != buf->inline_) {
        PyMem_Free(buf->data);
    }
    buf->data = grown;
    buf->cap = cap;
    return 0;
}

static int put(Buffer *buf, const char *bytes, Py_ssize_t n) {
    if (reserve(buf, n) < 0) {
        return -1;
    }
    memcpy(buf->data + buf->len, bytes, (size_t)n);
    buf->len += n;
    return 0;
}

static int put_char(Buffer *buf, char c) { return put(buf, &c, 1); }

/* tag, the text of a Python object (str() of an int, say), terminator */
static int put_text_of(Buffer *buf, char tag, PyObject *text, char end) {
    if (text == NULL) {
        return -1;
    }
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    int failed = utf8 == NULL || put_char(buf, tag) < 0 || put(buf, utf8, n) < 0 ||
                 put_char(buf, end) < 0;
    Py_DECREF(text);
    return failed ? -1 : 0;
}

/* i<decimal>; of a machine integer */
static int put_small(Buffer *buf, long long value) {
    char text[24];
    char *end = text + sizeof text, *p = end;
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    *--p = ';';
    do {
        *--p = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) {
        *--p = '-';
    }
    *--p = 'i';
    return put(buf, p, end - p);
}

static int put_int(Buffer *buf, PyObject *value) {
    int overflow = 0;
    long long small = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (small == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return put_text_of(buf, 'i', PyObject_Str(value), ';');
    }
    return put_small(buf, small);
}

static int put_float(Buffer *buf, double x) {
    if (isfinite(x) && floor(x) == x) { /* integral: the same key as the int */
        if (fabs(x) < 9.0e18) {
            return put_small(buf, (long long)x);
        }
        PyObject *whole = PyLong_FromDouble(x);
        if (whole == NULL) {
            return -1;
        }
        int failed = put_int(buf, whole);
        Py_DECREF(whole);
        return failed;
    }
    char *text = PyOS_double_to_string(x, 'r', 0, 0, NULL);
    if (text == NULL) {
        return -1;
    }
    int failed = put_char(buf, 'd') < 0 || put(buf, text, (Py_ssize_t)strlen(text)) < 0 ||
                 put_char(buf, ';') < 0;
    PyMem_Free(text);
    return failed ? -1 : 0;
}

static int put_str(Buffer *buf, PyObject *value) {
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(value, &n);
    PyObject *encoded = NULL;
    if (utf8 == NULL) { /* a lone surrogate: kept, as Python's "surrogatepass" */
        PyErr_Clear();
        encoded = PyUnicode_AsEncodedString(value, "utf-8", "surrogatepass");
        if (encoded == NULL) {
            return -1;
        }
        utf8 = PyBytes_AS_STRING(encoded);
        n = PyBytes_GET_SIZE(encoded);
    }
    char head[24];
    char *end = head + sizeof head, *p = end;
    Py_ssize_t rest = n;
    *--p = ':';
    do {
        *--p = (char)('0' + rest % 10);
        rest /= 10;
    } while (rest);
    *--p = 's';
    int failed = put(buf, p, end - p) < 0 || put(buf, utf8, n) < 0;
    Py_XDECREF(encoded);
    return failed ? -1 : 0;
}

static int put_value(Buffer *buf, PyObject *value);

static int put_list(Buffer *buf, PyObject *value) {
    if (put_char(buf, '[') < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
        PyObject *item = PyList_GET_ITEM(value, i);
        Py_INCREF(item);
        int failed = put_value(buf, item);
        Py_DECREF(item);
        if (failed < 0) {
            return -1;
        }
    }
    return put_char(buf, ']');
}

/* per nested dict, on the C stack: kept small, as values may nest as deep as the recursion
 * limit lets them */
#define INLINE_ENTRIES 8
#define SMALL_COPY 256

typedef struct {
    Py_ssize_t start;  /* offset of the entry (its key, then its value) */
    Py_ssize_t key;    /* length of the key's encoding */
    Py_ssize_t length; /* length of the whole entry */
    const char *base;  /* the bytes the offsets are in, while sorting */
} Entry;

static int compare_bytes(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb) {
    int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
    if (c != 0) {
        return c;
    }
    return na < nb ? -1 : (na > nb ? 1 : 0);
}

/* By the key's bytes, then the value's: the order Python's sorted() gives (key, value) pairs
 * of bytes. */
static int compare_entries(const void *pa, const void *pb) {
    const Entry *a = pa, *b = pb;
    int c = compare_bytes(a->base + a->start, a->key, b->base + b->start, b->key);
    if (c != 0) {
        return c;
    }
    return compare_bytes(a->base + a->start + a->key, a->length - a->key,
                         b->base + b->start + b->key, b->length - b->key);
}

static int put_dict(Buffer *buf, PyObject *value) {
    if (put_char(buf, '{') < 0) {
        return -1;
    }
    Py_ssize_t count = PyDict_GET_SIZE(value);
    Py_ssize_t first = buf->len;
    Entry few[INLINE_ENTRIES];
    Entry *entries = NULL;
    if (count > INLINE_ENTRIES) {
        entries = PyMem_Malloc((size_t)count * sizeof(Entry));
        if (entries == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    } else if (count > 1) {
        entries = few;
    }
    Py_ssize_t pos = 0, n = 0;
    PyObject *name, *item;
    int failed = 0;
    while (!failed && PyDict_Next(value, &pos, &name, &item)) {
        if (n >= count) { /* grew under a fallback */
            PyErr_SetString(PyExc_RuntimeError, "a dict changed while its key was made");
            failed = 1;
            break;
        }
        Py_INCREF(name);
        Py_INCREF(item);
        Py_ssize_t start = buf->len;
        failed = put_value(buf, name) < 0;
        Py_ssize_t key = buf->len - start;
        failed = failed || put_value(buf, item) < 0;
        Py_DECREF(name);
        Py_DECREF(item);
        if (entries != NULL && !failed) {
            entries[n] = (Entry){start, key, buf->len - start, NULL};
        }
        n++;
    }
    if (!failed && entries != NULL && n > 1) {
        Py_ssize_t size = buf->len - first;
        char small[SMALL_COPY];
        char *copy = size <= SMALL_COPY ? small : PyMem_Malloc((size_t)size);
        if (copy == NULL) {
            PyErr_NoMemory();
            failed = 1;
        } else {
            memcpy(copy, buf->data + first, (size_t)size);
            for (Py_ssize_t i = 0; i < n; i++) {
                entries[i].start -= first;
                entries[i].base = copy;
            }
            qsort(entries, (size_t)n, sizeof(Entry), compare_entries);
            char *out = buf->data + first;
            for (Py_ssize_t i = 0; i < n; i++) {
                memcpy(out, copy + entries[i].start, (size_t)entries[i].length);
                out += entries[i].length;
            }
            if (copy != small) {
                PyMem_Free(copy);
            }
        }
    }
    if (entries != few) {
        PyMem_Free(entries);
    }
    return failed ? -1 : put_char(buf, '}');
}

static int put_fallback(Buffer *buf, PyObject *value) {
    PyObject *encoded = PyObject_CallOneArg(FALLBACK, value);
    if (encoded == NULL) {
        return -1;
    }
    int failed;
    if (!PyBytes_Check(encoded)) {
        PyErr_SetString(PyExc_TypeError, "the typed key fallback must return bytes");
        failed = -1;
    } else {
        failed = put(buf, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
    }
    Py_DECREF(encoded);
    return failed;
}

static int put_value(Buffer *buf, PyObject *value) {
    if (value == Py_None) {
        return put_char(buf, 'n');
    }
    if (value == Py_True || value == Py_False) {
        return put_char(buf, value == Py_True ? 't' : 'f');
    }
    if (PyUnicode_CheckExact(value)) {
        return put_str(buf, value);
    }
    if (PyLong_CheckExact(value)) {
        return put_int(buf, value);
    }
    if (PyFloat_CheckExact(value)) {
        return put_float(buf, PyFloat_AS_DOUBLE(value));
    }
    if (!PyDict_CheckExact(value) && !PyList_CheckExact(value)) {
        return put_fallback(buf, value);
    }
    if (Py_EnterRecursiveCall(" while making a typed key")) {
        return -1;
    }
    int failed = PyDict_CheckExact(value) ? put_dict(buf, value) : put_list(buf, value);
    Py_LeaveRecursiveCall();
    return failed;
}

static int ready(void) {
    if (FALLBACK == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_keys.setup() was not called");
        return 0;
    }
    return 1;
}

static PyObject *typed_key(PyObject *self, PyObject *value) {
    if (!ready()) {
        return NULL;
    }
    Buffer buf;
    buffer_init(&buf);
    PyObject *key = NULL;
    if (put_value(&buf, value) == 0) {
        key = PyBytes_FromStringAndSize(buf.data, buf.len);
    }
    buffer_free(&buf);
    return key;
}

/* A call's key, the key of [name, arguments], appended: 0, or -1 on error. A call is a
 * tuple whose items 0 and 1 are its name and arguments (a ToolCall). */
static int put_call(Buffer *buf, PyObject *call) {
    if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) < 2) {
        PyErr_SetString(PyExc_TypeError, "a call must be a (name, arguments, ...) tuple");
        return -1;
    }
    if (put_char(buf, '[') < 0 || put_value(buf, PyTuple_GET_ITEM(call, 0)) < 0 ||
        put_value(buf, PyTuple_GET_ITEM(call, 1)) < 0) {
        return -1;
    }
    return put_char(buf, ']');
}

static PyObject *call_keys(PyObject *self, PyObject *calls) {
    if (!ready()) {
        return NULL;
    }
    /* a copy: a key's Python fallback may change the caller's list */
    PyObject *seq = PySequence_Tuple(calls);
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    Buffer buf;
    buffer_init(&buf);
    if (out == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        buf.len = 0;
        if (put_call(&buf, PyTuple_GET_ITEM(seq, i)) < 0) { /* held by the copy */
            goto fail;
        }
        PyObject *key = PyBytes_FromStringAndSize(buf.data, buf.len);
        if (key == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(out, i, key);
    }
    buffer_free(&buf);
    Py_DECREF(seq);
    return out;
fail:
    buffer_free(&buf);
    Py_DECREF(seq);
    Py_XDECREF(out);
    return NULL;
}

/* The keys of a row's calls, each distinct key once (in `out`, new references; at most n).
 * Returns how many, or -1 on error. */
static Py_ssize_t distinct_keys(PyObject *calls, Buffer *buf, PyObject **out, PyObject *seen) {
    Py_ssize_t n = PyTuple_GET_SIZE(calls), count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        buf->len = 0;
        PyObject *key = NULL;
        if (put_call(buf, PyTuple_GET_ITEM(calls, i)) == 0) {
            key = PyBytes_FromStringAndSize(buf->data, buf->len);
        }
        int repeated = key == NULL ? -1 : PySet_Contains(seen, key);
        if (repeated == 0) {
            repeated = PySet_Add(seen, key) < 0 ? -1 : 0;
        }
        if (repeated == 0) {
            out[count++] = key;
            continue;
        }
        Py_XDECREF(key);
        if (repeated < 0) {
            goto fail;
        }
    }
    return count;
fail:
    for (Py_ssize_t j = 0; j < count; j++) {
        Py_DECREF(out[j]);
    }
    return -1;
}

/* Where a key sits in a row's buffer of keys. */
typedef struct {
    Py_ssize_t start;
    Py_ssize_t len;
} Span;

#define FEW_CALLS 32 /* up to this many calls a side, keys are compared without a set */

static int same_key(const Buffer *buf, Span a, Span b) {
    return a.len == b.len && memcmp(buf->data + a.start, buf->data + b.start, (size_t)a.len) == 0;
}

/* The distinct keys of a row's few calls, encoded one after another into `buf` (spans in
 * `out`): how many, or -1 on error. */
static Py_ssize_t few_keys(PyObject *calls, Buffer *buf, Span *out) {
    Py_ssize_t n = PyTuple_GET_SIZE(calls), count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Span key = {buf->len, 0};
        if (put_call(buf, PyTuple_GET_ITEM(calls, i)) < 0) {
            return -1;
        }
        key.len = buf->len - key.start;
        int repeated = 0;
        for (Py_ssize_t j = 0; j < count && !repeated; j++) {
            repeated = same_key(buf, out[j], key);
        }
        if (repeated) {
            buf->len = key.start; /* drop it */
        } else {
            out[count++] = key;
        }
    }
    return count;
}

/* distinct_counts(actual, expected) -> bytes of int64 (tp, made, wanted) per row: the
 * distinct calls (by key) made, expected, and both; -1s where a row's calls are None. */
static PyObject *distinct_counts(PyObject *self, PyObject *args) {
    PyObject *actual, *expected;
    if (!PyArg_ParseTuple(args, "OO:distinct_counts", &actual, &expected) || !ready()) {
        return NULL;
    }
    /* copies, here and of each row: a key's Python fallback may change the caller's lists */
    PyObject *rows_a = PySequence_Tuple(actual);
    PyObject *rows_e = rows_a ? PySequence_Tuple(expected) : NULL;
    PyObject *result = NULL, *made_set = NULL, *wanted_set = NULL;
    PyObject **keys = NULL;
    Py_ssize_t capacity = 0;
    Buffer buf;
    buffer_init(&buf);
    if (rows_e == NULL) {
        goto done;
    }
    Py_ssize_t rows = PyTuple_GET_SIZE(rows_a);
    if (PyTuple_GET_SIZE(rows_e) != rows) {
        PyErr_SetString(PyExc_ValueError, "actual and expected differ in length");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, rows * 3 * (Py_ssize_t)sizeof(long long));
    made_set = PySet_New(NULL);
    wanted_set = PySet_New(NULL);
    if (result == NULL || made_set == NULL || wanted_set == NULL) {
        goto fail;
    }
    long long *counts = (long long *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < rows; i++) {
        PyObject *a = PyTuple_GET_ITEM(rows_a, i);
        PyObject *e = PyTuple_GET_ITEM(rows_e, i);
        long long *row = counts + 3 * i;
        if (a == Py_None || e == Py_None) {
            row[0] = row[1] = row[2] = -1;
            continue;
        }
        PyObject *done = PySequence_Tuple(a);
        if (done == NULL) {
            goto fail;
        }
        PyObject *few = PySequence_Tuple(e);
        if (few == NULL) {
            Py_DECREF(done);
            goto fail;
        }
        if (PyTuple_GET_SIZE(done) <= FEW_CALLS && PyTuple_GET_SIZE(few) <= FEW_CALLS) {
            Span made_keys[FEW_CALLS], wanted_keys[FEW_CALLS];
            buf.len = 0;
            Py_ssize_t made = few_keys(done, &buf, made_keys);
            Py_ssize_t wanted = made < 0 ? -1 : few_keys(few, &buf, wanted_keys);
            Py_DECREF(done);
            Py_DECREF(few);
            if (wanted < 0) {
                goto fail;
            }
            long long both = 0;
            for (Py_ssize_t k = 0; k < wanted; k++) {
                for (Py_ssize_t j = 0; j < made; j++) {
                    if (same_key(&buf, wanted_keys[k], made_keys[j])) {
                        both++;
                        break;
                    }
                }
            }
            row[0] = both;
            row[1] = (long long)made;
            row[2] = (long long)wanted;
            continue;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(done);
        if (n > capacity) {
            PyObject **grown = PyMem_Realloc(keys, (size_t)n * sizeof(PyObject *));
            if (grown == NULL) {
                Py_DECREF(done);
                Py_DECREF(few);
                PyErr_NoMemory();
                goto fail;
            }
            keys = grown;
            capacity = n;
        }
        if (PySet_Clear(made_set) < 0 || PySet_Clear(wanted_set) < 0) {
            Py_DECREF(done);
            Py_DECREF(few);
            goto fail;
        }
        Py_ssize_t made = distinct_keys(done, &buf, keys, made_set);
        Py_DECREF(done);
        if (made < 0) {
            Py_DECREF(few);
            goto fail;
        }
        for (Py_ssize_t k = 0; k < made; k++) {
            Py_DECREF(keys[k]); /* the set holds them */
        }
        PyObject *asked = few;
        Py_ssize_t m = PyTuple_GET_SIZE(asked);
        if (m > capacity) {
            PyObject **grown = PyMem_Realloc(keys, (size_t)m * sizeof(PyObject *));
            if (grown == NULL) {
                Py_DECREF(asked);
                PyErr_NoMemory();
                goto fail;
            }
            keys = grown;
            capacity = m;
        }
        Py_ssize_t wanted = distinct_keys(asked, &buf, keys, wanted_set);
        Py_DECREF(asked);
        if (wanted < 0) {
            goto fail;
        }
        long long both = 0;
        int failed = 0;
        for (Py_ssize_t k = 0; k < wanted; k++) {
            int hit = failed ? 0 : PySet_Contains(made_set, keys[k]);
            if (hit < 0) {
                failed = 1;
            }
            both += hit > 0;
            Py_DECREF(keys[k]);
        }
        if (failed) {
            goto fail;
        }
        row[0] = both;
        row[1] = (long long)made;
        row[2] = (long long)wanted;
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    buffer_free(&buf);
    PyMem_Free(keys);
    Py_XDECREF(made_set);
    Py_XDECREF(wanted_set);
    Py_XDECREF(rows_a);
    Py_XDECREF(rows_e);
    return result;
}

static PyObject *setup(PyObject *self, PyObject *fallback) {
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "the fallback must be callable");
        return NULL;
    }
    Py_INCREF(fallback);
    Py_XSETREF(FALLBACK, fallback);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_O, "setup(fallback): the Python encoding of the other types."},
    {"typed_key", typed_key, METH_O, "typed_key(value) -> bytes: the value's typed JSON key."},
    {"call_keys", call_keys, METH_O, "call_keys(calls) -> [typed_key([name, arguments]), ...]."},
    {"distinct_counts", distinct_counts, METH_VARARGS,
     "distinct_counts(actual, expected) -> int64 bytes of (tp, made, wanted) per row."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_keys", "Typed JSON keys of tool calls, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__keys(void) { return PyModule_Create(&module); }
