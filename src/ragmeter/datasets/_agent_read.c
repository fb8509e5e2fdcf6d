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
 * The items it makes hold only strings, numbers and JSON values; where every part of one is
 * already untracked by the cycle collector, so is the item (as the collector itself would
 * decide on its first pass), and a loaded dataset costs the collector little.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MESSAGE_LEVEL 3      /* the row 1, the messages list 2, a message 3 */
#define FIELD_LEVEL 2        /* a row's field value */
#define MAX_INT_DIGITS 1000  /* datasets._values.MAX_INT_DIGITS */

static PyObject *MESSAGE = NULL;   /* the Message type */
static PyObject *TOOL_CALL = NULL; /* the ToolCall type */
static PyObject *SCAN = NULL;      /* json's scan_once(text, index) -> (value, end) */
static PyObject *S_ROLE, *S_CONTENT, *S_TOOL_CALLS, *S_TOOLS_CALLED, *S_FUNCTION_CALL,
    *S_FUNCTION, *S_ID, *S_NAME, *S_ARGUMENTS, *S_TOOL_CALL_ID, *S_EMPTY, *S_ASSISTANT,
    *S_TOOL, *S_SYSTEM, *S_USER, *S_DEVELOPER;

/* Whether an object can stay out of the cycle collector's sight: not a GC type, or a GC
 * object it does not track. */
static int untracked(PyObject *item) {
    return !PyObject_IS_GC(item) || !PyObject_GC_IsTracked(item);
}

/* A named tuple of `type` holding the n items given (new references, stolen), untracked
 * when all of them are. */
static PyObject *make(PyObject *type, PyObject **items, Py_ssize_t n) {
    PyObject *values = PyTuple_New(n);
    if (values == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(values, i, items[i]);
    }
    PyObject *args = PyTuple_Pack(1, values); /* tuple.__new__(type, values) */
    Py_DECREF(values);
    if (args == NULL) {
        return NULL;
    }
    PyObject *made = PyTuple_Type.tp_new((PyTypeObject *)type, args, NULL);
    Py_DECREF(args);
    if (made == NULL) {
        return NULL;
    }
    int all = 1;
    for (Py_ssize_t i = 0; i < n && all; i++) {
        all = untracked(PyTuple_GET_ITEM(made, i));
    }
    if (all && PyObject_GC_IsTracked(made)) {
        PyObject_GC_UnTrack(made);
    }
    return made;
}

/* A list's items as a tuple, untracked when they all are. */
static PyObject *frozen(PyObject *list) {
    PyObject *out = PyList_AsTuple(list);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(out); i++) {
        if (!untracked(PyTuple_GET_ITEM(out, i))) {
            return out;
        }
    }
    if (PyObject_GC_IsTracked(out)) {
        PyObject_GC_UnTrack(out);
    }
    return out;
}

/* dict[key] as a borrowed reference; NULL with no error when absent. */
static PyObject *get(PyObject *dict, PyObject *key) { return PyDict_GetItemWithError(dict, key); }

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
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) {
        return NULL;
    }
    PyObject *found = PyObject_CallFunctionObjArgs(SCAN, text, zero, NULL);
    Py_DECREF(zero);
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
        }
    }
    Py_DECREF(found);
    return value;
}

/* 1 when set to a new reference, 0 when absent or not vouched for, -1 on error. */
typedef int Outcome;

static Outcome openai_call(PyObject *call, Py_ssize_t room, PyObject **made) {
    if (!PyDict_CheckExact(call)) {
        return 0;
    }
    PyObject *function = get(call, S_FUNCTION);
    if (function == NULL || !PyDict_CheckExact(function)) {
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *id = get(call, S_ID);
    PyObject *name = id ? get(function, S_NAME) : NULL;
    PyObject *text = name ? get(function, S_ARGUMENTS) : NULL;
    if (text == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (!PyUnicode_CheckExact(id) || !PyUnicode_CheckExact(name) ||
        !PyUnicode_CheckExact(text) || PyUnicode_GET_LENGTH(name) == 0) {
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
static Outcome assistant_calls(PyObject *raw, PyObject *calls, Py_ssize_t room, PyObject **made) {
    int other = PyDict_Contains(raw, S_TOOLS_CALLED);
    if (other == 0) {
        other = PyDict_Contains(raw, S_FUNCTION_CALL);
    }
    if (other != 0) {
        return other < 0 ? -1 : 0;
    }
    PyObject *given = get(raw, S_TOOL_CALLS);
    if (given == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (given == NULL || given == Py_None) {
        *made = PyTuple_New(0);
        return *made ? 1 : -1;
    }
    if (!PyList_CheckExact(given)) {
        return 0;
    }
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(given); i++) {
        PyObject *call = NULL;
        Outcome got = openai_call(PyList_GET_ITEM(given, i), room, &call);
        if (got <= 0) {
            Py_DECREF(list);
            return got;
        }
        int failed = PyList_Append(list, call) < 0 ||
                     PyDict_SetItem(calls, PyTuple_GET_ITEM(call, 2), call) < 0;
        Py_DECREF(call);
        if (failed) {
            Py_DECREF(list);
            return -1;
        }
    }
    *made = frozen(list);
    Py_DECREF(list);
    return *made ? 1 : -1;
}

static Outcome message(PyObject *raw, PyObject *calls, Py_ssize_t room, PyObject **made) {
    if (!PyDict_CheckExact(raw)) {
        return 0;
    }
    PyObject *role = get(raw, S_ROLE);
    PyObject *content = role ? get(raw, S_CONTENT) : NULL;
    if (PyErr_Occurred()) {
        return -1;
    }
    if (content == NULL || content == Py_None) {
        content = S_EMPTY;
    }
    if (role == NULL || !PyUnicode_CheckExact(role) || !PyUnicode_CheckExact(content)) {
        return 0;
    }
    if (PyUnicode_Compare(role, S_ASSISTANT) == 0) {
        PyObject *tool_calls = NULL;
        Outcome got = assistant_calls(raw, calls, room, &tool_calls);
        if (got <= 0) {
            return got;
        }
        PyObject *items[5] = {Py_NewRef(S_ASSISTANT), Py_NewRef(content), tool_calls,
                              Py_NewRef(Py_None), Py_NewRef(Py_None)};
        *made = make(MESSAGE, items, 5);
    } else if (PyUnicode_Compare(role, S_TOOL) == 0) {
        PyObject *id = get(raw, S_TOOL_CALL_ID);
        PyObject *found = id && PyUnicode_CheckExact(id) ? get(calls, id) : NULL;
        if (found == NULL) {
            return PyErr_Occurred() ? -1 : 0;
        }
        PyObject *items[5] = {Py_NewRef(S_TOOL), Py_NewRef(content), PyTuple_New(0),
                              Py_NewRef(PyTuple_GET_ITEM(found, 2)),
                              Py_NewRef(PyTuple_GET_ITEM(found, 0))};
        if (items[2] == NULL) {
            for (int i = 0; i < 5; i++) {
                Py_XDECREF(items[i]);
            }
            return -1;
        }
        *made = make(MESSAGE, items, 5);
    } else {
        PyObject *as;
        if (PyUnicode_Compare(role, S_USER) == 0) {
            as = S_USER;
        } else if (PyUnicode_Compare(role, S_SYSTEM) == 0 ||
                   PyUnicode_Compare(role, S_DEVELOPER) == 0) {
            as = S_SYSTEM;
        } else {
            return PyErr_Occurred() ? -1 : 0;
        }
        PyObject *empty = PyTuple_New(0);
        if (empty == NULL) {
            return -1;
        }
        PyObject *items[5] = {Py_NewRef(as), Py_NewRef(content), empty, Py_NewRef(Py_None),
                              Py_NewRef(Py_None)};
        *made = make(MESSAGE, items, 5);
    }
    return *made ? 1 : -1;
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
    if (!PyArg_ParseTuple(args, "O!n:openai_messages", &PyList_Type, &items, &max_depth) ||
        !ready()) {
        return NULL;
    }
    Py_ssize_t room = max_depth - (MESSAGE_LEVEL + 3); /* the message, tool_calls, a call,
                                                          function */
    PyObject *out = PyList_New(0);
    PyObject *calls = PyDict_New();
    PyObject *result = NULL;
    if (out == NULL || calls == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *made = NULL;
        Outcome got = message(PyList_GET_ITEM(items, i), calls, room, &made);
        if (got < 0) {
            goto done;
        }
        if (got == 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        int failed = PyList_Append(out, made);
        Py_DECREF(made);
        if (failed) {
            goto done;
        }
    }
    result = frozen(out);
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
    if (!PyArg_ParseTuple(args, "O!n:plain_calls", &PyList_Type, &items, &max_depth) ||
        !ready()) {
        return NULL;
    }
    Py_ssize_t room = max_depth - (FIELD_LEVEL + 1); /* the list, a call */
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *raw = PyList_GET_ITEM(items, i);
        if (!PyDict_CheckExact(raw)) {
            goto not_here;
        }
        int has = PyDict_Contains(raw, S_FUNCTION);
        if (has != 0) {
            if (has < 0) {
                goto fail;
            }
            goto not_here;
        }
        PyObject *name = get(raw, S_NAME);
        PyObject *arguments = name ? get(raw, S_ARGUMENTS) : NULL;
        PyObject *id = arguments ? get(raw, S_ID) : NULL;
        if (PyErr_Occurred()) {
            goto fail;
        }
        if (arguments == NULL || !PyUnicode_CheckExact(name) ||
            PyUnicode_GET_LENGTH(name) == 0 || !PyDict_CheckExact(arguments)) {
            goto not_here;
        }
        if (id == NULL) {
            id = Py_None;
        } else if (id != Py_None && !PyUnicode_CheckExact(id)) {
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
        PyObject *parts[3] = {Py_NewRef(name), Py_NewRef(arguments), Py_NewRef(id)};
        PyObject *call = make(TOOL_CALL, parts, 3);
        if (call == NULL || PyList_Append(out, call) < 0) {
            Py_XDECREF(call);
            goto fail;
        }
        Py_DECREF(call);
    }
    PyObject *result = frozen(out);
    Py_DECREF(out);
    return result;
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
    if (!PyArg_ParseTuple(args, "O!O!O:setup", &PyType_Type, &message_type, &PyType_Type,
                          &call_type, &scan)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)message_type, &PyTuple_Type) ||
        !PyType_IsSubtype((PyTypeObject *)call_type, &PyTuple_Type) || !PyCallable_Check(scan)) {
        PyErr_SetString(PyExc_TypeError, "setup(Message, ToolCall, scan_once): tuple types");
        return NULL;
    }
    if (S_ROLE == NULL &&
        (intern(&S_ROLE, "role") < 0 || intern(&S_CONTENT, "content") < 0 ||
         intern(&S_TOOL_CALLS, "tool_calls") < 0 || intern(&S_TOOLS_CALLED, "tools_called") < 0 ||
         intern(&S_FUNCTION_CALL, "function_call") < 0 || intern(&S_FUNCTION, "function") < 0 ||
         intern(&S_ID, "id") < 0 || intern(&S_NAME, "name") < 0 ||
         intern(&S_ARGUMENTS, "arguments") < 0 || intern(&S_TOOL_CALL_ID, "tool_call_id") < 0 ||
         intern(&S_EMPTY, "") < 0 || intern(&S_ASSISTANT, "assistant") < 0 ||
         intern(&S_TOOL, "tool") < 0 || intern(&S_SYSTEM, "system") < 0 ||
         intern(&S_USER, "user") < 0 || intern(&S_DEVELOPER, "developer") < 0)) {
        return NULL;
    }
    Py_XSETREF(MESSAGE, Py_NewRef(message_type));
    Py_XSETREF(TOOL_CALL, Py_NewRef(call_type));
    Py_XSETREF(SCAN, Py_NewRef(scan));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(Message, ToolCall, scan_once): the types to make."},
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
