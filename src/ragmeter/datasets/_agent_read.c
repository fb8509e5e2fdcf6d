/* The usual agent rows read in C: the compiled path of _agent_fast.openai_messages and
 * _agent_fast.plain_calls, value for value.
 *
 * openai_messages(items, max_depth) -> tuple of Message, or None
 * plain_calls(items, max_depth) -> tuple of ToolCall, or None
 *
 * None means "not vouched for here": another format, an item to fix, a value to check
 * closely; the Python readers then read the value from the start and word any error. So this
 * file only ever accepts what the Python fast path accepts, and returns the same items.
 *
 * The items it makes hold only strings, numbers and JSON values, and are read-only by
 * contract. Where every part of one is already untracked by the cycle collector, the item is
 * untracked too, as the collector itself untracks a plain tuple on its first pass (it never
 * does for a named tuple), and so are the lists and objects of the arguments it parsed: a
 * loaded dataset then costs the collector little. Should someone put a cycle into arguments
 * anyway, it is never collected (a leak, not a crash).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* set by setup() from the Python constants: a message's and a field value's nesting level
 * in a row (3 and 2), and datasets._values.MAX_INT_DIGITS */
static Py_ssize_t MESSAGE_LEVEL = 3, FIELD_LEVEL = 2, MAX_INT_DIGITS = 1000;

static PyObject *MESSAGE = NULL;   /* the Message type */
static PyObject *TOOL_CALL = NULL; /* the ToolCall type */
static PyObject *SCAN = NULL;      /* json's scan_once(text, index) -> (value, end) */
static PyObject *ZERO = NULL;      /* the index 0 */
static PyObject *S_ROLE, *S_CONTENT, *S_TOOL_CALLS, *S_TYPE,
    *S_FUNCTION, *S_ID, *S_NAME, *S_ARGUMENTS, *S_TOOL_CALL_ID, *S_EMPTY, *S_ASSISTANT,
    *S_TOOL, *S_SYSTEM, *S_USER, *S_DEVELOPER;

/* Whether an object can stay out of the cycle collector's sight: not a GC type, or a GC
 * object it does not track. */
static int untracked(PyObject *item) {
    return !PyObject_IS_GC(item) || !PyObject_GC_IsTracked(item);
}

/* A named tuple of `type` holding the n items given (new references, stolen), untracked
 * when all of them are: tuple.__new__(type, items), without the copies. */
static PyObject *make(PyObject *type, PyObject **items, Py_ssize_t n) {
    PyObject *made = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, n);
    if (made == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    int all = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(made, i, items[i]);
        all = all && untracked(items[i]);
    }
    if (all && PyObject_GC_IsTracked(made)) {
        PyObject_GC_UnTrack(made);
    }
    return made;
}

/* A JSON value this module parsed (so no one else holds it) taken out of the cycle
 * collector's sight where all it holds already is, as the collector would do for a tuple:
 * it is read-only from here on, and JSON holds no cycles. Returns whether it is untracked. */
static int untrack_json(PyObject *value) {
    int all = 1;
    if (PyList_CheckExact(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            all = untrack_json(PyList_GET_ITEM(value, i)) && all;
        }
    } else if (PyDict_CheckExact(value)) {
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &pos, &key, &item)) {
            all = untrack_json(item) && all;
        }
    } else {
        return untracked(value);
    }
    if (all && PyObject_GC_IsTracked(value)) {
        PyObject_GC_UnTrack(value);
    }
    return all;
}

/* Whether every key of a dict is an exact str among the `n` allowed ones, the text values
 * among them (`texts`, a bit per allowed key) exact str or None, and the others (if any)
 * present as given. Once true, looking up these keys runs no Python code: the dict's keys
 * are all exact str, compared by their text. */
static int keys_within(PyObject *dict, PyObject *const *allowed, int n, unsigned texts) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) {
            return 0;
        }
        int k = 0;
        while (k < n && key != allowed[k] && PyUnicode_Compare(key, allowed[k]) != 0) {
            k++;
        }
        if (k == n) {
            return 0;
        }
        if ((texts >> k) & 1u && value != Py_None && !PyUnicode_CheckExact(value)) {
            return 0;
        }
    }
    return 1;
}

/* dict[key] as a borrowed reference (NULL when absent), for a dict whose keys passed
 * keys_within: no Python code runs, so it stays valid while the dict is held. */
static PyObject *get(PyObject *dict, PyObject *key) { return PyDict_GetItem(dict, key); }

/* The number of '{' and '[' in a text: a bound on how deep its JSON nests. */
static Py_ssize_t brackets(PyObject *text) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), count = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        count += c == '{' || c == '[';
    }
    return count;
}

/* The parsed arguments of a call's JSON text, or NULL: with an error set when something
 * failed, without one when the text is for the Python reader to judge. */
static PyObject *arguments_of(PyObject *text, Py_ssize_t room) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n == 0 || n > MAX_INT_DIGITS || brackets(text) > room) {
        return NULL;
    }
    PyObject *call[2] = {text, ZERO};
    PyObject *found = PyObject_Vectorcall(SCAN, call, 2, NULL);
    if (found == NULL) {
        if (PyErr_ExceptionMatches(PyExc_StopIteration) ||
            PyErr_ExceptionMatches(PyExc_ValueError) ||
            PyErr_ExceptionMatches(PyExc_RecursionError)) {
            PyErr_Clear();
        }
        return NULL;
    }
    PyObject *value = NULL;
    if (PyTuple_Check(found) && PyTuple_GET_SIZE(found) == 2) {
        Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(found, 1));
        if (end == n) {
            value = Py_NewRef(PyTuple_GET_ITEM(found, 0));
            untrack_json(value); /* nested arguments: bounded by `room` above */
        } else if (end == -1 && PyErr_Occurred()) {
            PyErr_Clear();
        }
    }
    Py_DECREF(found);
    return value;
}

/* 1 when set to a new reference, 0 when not vouched for here, -1 on error. */
typedef int Outcome;

static PyObject *CALL_KEYS[3], *FUNCTION_KEYS[2], *ASSISTANT_KEYS[4], *TOOL_KEYS[4],
    *PLAIN_KEYS[3], *EXPECTED_KEYS[3];

static Outcome openai_call(PyObject *call, Py_ssize_t room, PyObject **made) {
    /* id, type: text; function: the object */
    if (!PyDict_CheckExact(call) || !keys_within(call, CALL_KEYS, 3, 0x3u)) {
        return 0;
    }
    PyObject *function = get(call, S_FUNCTION);
    if (function == NULL || !PyDict_CheckExact(function) ||
        !keys_within(function, FUNCTION_KEYS, 2, 0x3u)) {
        return 0;
    }
    PyObject *id = get(call, S_ID);
    PyObject *name = get(function, S_NAME);
    PyObject *text = get(function, S_ARGUMENTS);
    if (id == NULL || name == NULL || text == NULL || !PyUnicode_CheckExact(id) ||
        !PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(text) ||
        PyUnicode_GET_LENGTH(name) == 0) {
        return 0;
    }
    PyObject *arguments = arguments_of(text, room);
    if (arguments == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *items[3] = {Py_NewRef(name), arguments, Py_NewRef(id)};
    *made = make(TOOL_CALL, items, 3);
    return *made ? 1 : -1;
}

/* An assistant message's calls as a tuple (each also entered in `calls` by id). */
static Outcome assistant_calls(PyObject *given, PyObject *calls, Py_ssize_t room,
                               PyObject **made) {
    if (given == NULL || given == Py_None) {
        *made = PyTuple_New(0);
        return *made ? 1 : -1;
    }
    if (!PyList_CheckExact(given)) {
        return 0;
    }
    Py_ssize_t n = PyList_GET_SIZE(given);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) {
        return -1;
    }
    int all = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *call = NULL;
        Outcome got = openai_call(PyList_GET_ITEM(given, i), room, &call);
        if (got <= 0) {
            Py_DECREF(out);
            return got;
        }
        PyTuple_SET_ITEM(out, i, call);
        all = all && untracked(call);
        if (PyDict_SetItem(calls, PyTuple_GET_ITEM(call, 2), call) < 0) {
            Py_DECREF(out);
            return -1;
        }
    }
    if (all && PyObject_GC_IsTracked(out)) {
        PyObject_GC_UnTrack(out);
    }
    *made = out;
    return 1;
}

static Outcome message(PyObject *raw, PyObject *calls, Py_ssize_t room, PyObject **made) {
    if (!PyDict_CheckExact(raw)) {
        return 0;
    }
    PyObject *role = PyDict_GetItemWithError(raw, S_ROLE); /* before the keys are vouched for */
    if (role == NULL || !PyUnicode_CheckExact(role)) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(role);
    Outcome got = 0;
    PyObject *content, *as;
    /* the text keys: content, name (and tool_call_id), a bit each in keys_within's order */
    if (PyUnicode_Compare(role, S_ASSISTANT) == 0) {
        if (!keys_within(raw, ASSISTANT_KEYS, 4, 0x6u)) {
            goto done;
        }
        content = get(raw, S_CONTENT);
        PyObject *tool_calls = NULL;
        got = assistant_calls(get(raw, S_TOOL_CALLS), calls, room, &tool_calls);
        if (got <= 0) {
            goto done;
        }
        PyObject *items[5] = {Py_NewRef(S_ASSISTANT),
                              Py_NewRef(content && content != Py_None ? content : S_EMPTY),
                              tool_calls, Py_NewRef(Py_None), Py_NewRef(Py_None)};
        *made = make(MESSAGE, items, 5);
    } else if (PyUnicode_Compare(role, S_TOOL) == 0) {
        if (!keys_within(raw, TOOL_KEYS, 4, 0xEu)) {
            goto done;
        }
        PyObject *id = get(raw, S_TOOL_CALL_ID);
        PyObject *found = id && id != Py_None ? PyDict_GetItemWithError(calls, id) : NULL;
        if (found == NULL) {
            got = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        content = get(raw, S_CONTENT);
        PyObject *items[5] = {Py_NewRef(S_TOOL),
                              Py_NewRef(content && content != Py_None ? content : S_EMPTY),
                              PyTuple_New(0), Py_NewRef(PyTuple_GET_ITEM(found, 2)),
                              Py_NewRef(PyTuple_GET_ITEM(found, 0))};
        if (items[2] == NULL) {
            for (int i = 0; i < 5; i++) {
                Py_XDECREF(items[i]);
            }
            got = -1;
            goto done;
        }
        *made = make(MESSAGE, items, 5);
    } else {
        if (PyUnicode_Compare(role, S_USER) == 0) {
            as = S_USER;
        } else if (PyUnicode_Compare(role, S_SYSTEM) == 0 ||
                   PyUnicode_Compare(role, S_DEVELOPER) == 0) {
            as = S_SYSTEM;
        } else {
            goto done;
        }
        if (!keys_within(raw, PLAIN_KEYS, 3, 0x6u)) {
            goto done;
        }
        content = get(raw, S_CONTENT);
        PyObject *empty = PyTuple_New(0);
        if (empty == NULL) {
            got = -1;
            goto done;
        }
        PyObject *items[5] = {Py_NewRef(as),
                              Py_NewRef(content && content != Py_None ? content : S_EMPTY),
                              empty, Py_NewRef(Py_None), Py_NewRef(Py_None)};
        *made = make(MESSAGE, items, 5);
    }
    got = *made ? 1 : -1;
done:
    Py_DECREF(role);
    return got;
}

static int ready(void) {
    if (MESSAGE == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_agent_read.setup() was not called");
        return 0;
    }
    return 1;
}

static PyObject *openai_messages(PyObject *self, PyObject *args) {
    PyObject *items;
    Py_ssize_t max_depth;
    if (!PyArg_ParseTuple(args, "On:openai_messages", &items, &max_depth) || !ready()) {
        return NULL;
    }
    /* the message, tool_calls, a call, function: not even a call fits below */
    if (!PyList_CheckExact(items) || max_depth < MESSAGE_LEVEL + 3) {
        Py_RETURN_NONE;
    }
    Py_ssize_t room = max_depth - (MESSAGE_LEVEL + 3);
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *out = PyTuple_New(n);
    PyObject *calls = PyDict_New();
    PyObject *result = NULL;
    if (out == NULL || calls == NULL) {
        goto done;
    }
    int all = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *raw = PyList_GET_ITEM(items, i);
        PyObject *made = NULL;
        Py_INCREF(raw);
        Outcome got = message(raw, calls, room, &made);
        Py_DECREF(raw);
        if (got < 0) {
            goto done;
        }
        if (got == 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyTuple_SET_ITEM(out, i, made);
        all = all && untracked(made);
    }
    if (all && PyObject_GC_IsTracked(out)) {
        PyObject_GC_UnTrack(out);
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(out);
    Py_XDECREF(calls);
    return result;
}

/* Whether a JSON value nests at most `room` levels and holds only exact JSON types with
 * machine-sized integers: 1 yes, 0 no (for the Python reader to judge), -1 error. */
static int plain_value(PyObject *value, Py_ssize_t room) {
    if (PyUnicode_CheckExact(value) || PyFloat_CheckExact(value) || value == Py_None ||
        PyBool_Check(value)) {
        return 1;
    }
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (n == -1 && PyErr_Occurred()) {
            return -1;
        }
        return !overflow;
    }
    if (room < 1) {
        return 0;
    }
    if (PyDict_CheckExact(value)) {
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &pos, &key, &item)) {
            if (!PyUnicode_CheckExact(key)) {
                return 0;
            }
            int ok = plain_value(item, room - 1);
            if (ok <= 0) {
                return ok;
            }
        }
        return 1;
    }
    if (PyList_CheckExact(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            int ok = plain_value(PyList_GET_ITEM(value, i), room - 1);
            if (ok <= 0) {
                return ok;
            }
        }
        return 1;
    }
    return 0;
}

static PyObject *plain_calls(PyObject *self, PyObject *args) {
    PyObject *items;
    Py_ssize_t max_depth;
    if (!PyArg_ParseTuple(args, "On:plain_calls", &items, &max_depth) || !ready()) {
        return NULL;
    }
    if (!PyList_CheckExact(items) || max_depth < FIELD_LEVEL + 2) {
        Py_RETURN_NONE;
    }
    Py_ssize_t room = max_depth - (FIELD_LEVEL + 1); /* the list, a call */
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) {
        return NULL;
    }
    int all = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *raw = PyList_GET_ITEM(items, i);
        /* name and id: text */
        if (!PyDict_CheckExact(raw) || !keys_within(raw, EXPECTED_KEYS, 3, 0x5u)) {
            goto not_here;
        }
        PyObject *name = get(raw, S_NAME);
        PyObject *arguments = get(raw, S_ARGUMENTS);
        PyObject *id = get(raw, S_ID);
        if (name == NULL || arguments == NULL || name == Py_None ||
            PyUnicode_GET_LENGTH(name) == 0 || !PyDict_CheckExact(arguments)) {
            goto not_here;
        }
        /* no recursion guard needed: the walk stops at `room` levels */
        int ok = plain_value(arguments, room);
        if (ok < 0) {
            goto fail;
        }
        if (ok == 0) {
            goto not_here;
        }
        PyObject *parts[3] = {Py_NewRef(name), Py_NewRef(arguments), Py_NewRef(id ? id : Py_None)};
        PyObject *call = make(TOOL_CALL, parts, 3);
        if (call == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(out, i, call);
        all = all && untracked(call);
    }
    if (all && PyObject_GC_IsTracked(out)) {
        PyObject_GC_UnTrack(out);
    }
    return out;
not_here:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

static int intern(PyObject **slot, const char *text) {
    *slot = PyUnicode_InternFromString(text);
    return *slot ? 0 : -1;
}

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *message_type, *call_type, *scan;
    if (!PyArg_ParseTuple(args, "O!O!Onnn:setup", &PyType_Type, &message_type, &PyType_Type,
                          &call_type, &scan, &MESSAGE_LEVEL, &FIELD_LEVEL, &MAX_INT_DIGITS)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)message_type, &PyTuple_Type) ||
        !PyType_IsSubtype((PyTypeObject *)call_type, &PyTuple_Type) || !PyCallable_Check(scan)) {
        PyErr_SetString(PyExc_TypeError, "setup(Message, ToolCall, ...): tuple types");
        return NULL;
    }
    if (S_ROLE == NULL &&
        (intern(&S_ROLE, "role") < 0 || intern(&S_CONTENT, "content") < 0 ||
         intern(&S_TOOL_CALLS, "tool_calls") < 0 || intern(&S_TYPE, "type") < 0 ||
         intern(&S_FUNCTION, "function") < 0 ||
         intern(&S_ID, "id") < 0 || intern(&S_NAME, "name") < 0 ||
         intern(&S_ARGUMENTS, "arguments") < 0 || intern(&S_TOOL_CALL_ID, "tool_call_id") < 0 ||
         intern(&S_EMPTY, "") < 0 || intern(&S_ASSISTANT, "assistant") < 0 ||
         intern(&S_TOOL, "tool") < 0 || intern(&S_SYSTEM, "system") < 0 ||
         intern(&S_USER, "user") < 0 || intern(&S_DEVELOPER, "developer") < 0)) {
        return NULL;
    }
    if (ZERO == NULL && (ZERO = PyLong_FromLong(0)) == NULL) {
        return NULL;
    }
    /* the keys each object may hold, in the order keys_within's text bits follow */
    PyObject *call_keys[3] = {S_ID, S_TYPE, S_FUNCTION};
    PyObject *function_keys[2] = {S_NAME, S_ARGUMENTS};
    PyObject *assistant_keys[4] = {S_ROLE, S_CONTENT, S_NAME, S_TOOL_CALLS};
    PyObject *tool_keys[4] = {S_ROLE, S_CONTENT, S_NAME, S_TOOL_CALL_ID};
    PyObject *plain_keys[3] = {S_ROLE, S_CONTENT, S_NAME};
    PyObject *expected_keys[3] = {S_NAME, S_ARGUMENTS, S_ID};
    memcpy(CALL_KEYS, call_keys, sizeof call_keys);
    memcpy(FUNCTION_KEYS, function_keys, sizeof function_keys);
    memcpy(ASSISTANT_KEYS, assistant_keys, sizeof assistant_keys);
    memcpy(TOOL_KEYS, tool_keys, sizeof tool_keys);
    memcpy(PLAIN_KEYS, plain_keys, sizeof plain_keys);
    memcpy(EXPECTED_KEYS, expected_keys, sizeof expected_keys);
    Py_XSETREF(MESSAGE, Py_NewRef(message_type));
    Py_XSETREF(TOOL_CALL, Py_NewRef(call_type));
    Py_XSETREF(SCAN, Py_NewRef(scan));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(Message, ToolCall, scan_once, message_level, field_level, max_int_digits)."},
    {"openai_messages", openai_messages, METH_VARARGS,
     "openai_messages(items, max_depth) -> tuple of Message, or None."},
    {"plain_calls", plain_calls, METH_VARARGS,
     "plain_calls(items, max_depth) -> tuple of ToolCall, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_agent_read", "The usual agent rows read, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__agent_read(void) { return PyModule_Create(&module); }
