/* Exact relevance judgements in one pass per row (the compiled path of _judge.judge_exact).
 *
 * judge(retrieved, relevant, width) -> (mask: bytearray, n_relevant: bytearray)
 *
 * Row i's relevant items go into a small open-addressing table (Python hashes, equality by
 * identity or ==, as a set has it); each retrieved item is looked up there once. A relevant
 * item is credited at its first (best) rank only, so a repeat later in the list is not
 * relevant. mask holds rows x width bytes (1: relevant), n_relevant one int64 a row (the
 * number of distinct relevant items). Errors (an unhashable item, a failing __eq__) propagate.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject *key; /* a reference the table holds; NULL when the slot is free */
    Py_hash_t hash;
    char credited;
} Slot;

typedef struct {
    Slot *slots;
    Py_ssize_t capacity; /* a power of two */
} Table;

/* Room for `items` keys at a load of at most 1/2, cleared; returns the index mask of the
 * slots in play (their count - 1), or -1 when memory runs out. */
static Py_ssize_t table_reserve(Table *table, Py_ssize_t items) {
    Py_ssize_t wanted = 8;
    while (wanted < 2 * items) {
        wanted *= 2;
    }
    if (wanted > table->capacity) {
        Slot *grown = PyMem_Realloc(table->slots, (size_t)wanted * sizeof(Slot));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        table->slots = grown;
        table->capacity = wanted;
    }
    memset(table->slots, 0, (size_t)wanted * sizeof(Slot));
    return wanted - 1;
}

/* The slot holding key (found: 1), or the free slot where it would go (found: 0); NULL on an
 * error raised by __eq__. */
static Slot *table_find(Slot *slots, Py_ssize_t mask, PyObject *key, Py_hash_t hash, int *found) {
    size_t i = (size_t)hash & (size_t)mask;
    for (;;) {
        Slot *slot = &slots[i];
        if (slot->key == NULL) {
            *found = 0;
            return slot;
        }
        if (slot->hash == hash) {
            if (slot->key == key) {
                *found = 1;
                return slot;
            }
            int equal = PyObject_RichCompareBool(slot->key, key, Py_EQ);
            if (equal < 0) {
                return NULL;
            }
            if (equal) {
                *found = 1;
                return slot;
            }
        }
        i = (i + 1) & (size_t)mask;
    }
}

/* Drop the references the table holds (slots 0..mask). */
static void table_release(Table *table, Py_ssize_t mask) {
    for (Py_ssize_t i = 0; i <= mask; i++) {
        Py_CLEAR(table->slots[i].key);
    }
}

/* Look `item` up (inserting it when `insert`); 1 when it was there already, 0 when not, -1 on
 * an error. A user's __hash__ or __eq__ may run Python code that changes the lists, so the
 * item is held while it is looked at and callers re-read the lists after each call. */
static int table_lookup(Table *table, Py_ssize_t mask, PyObject *item, int insert,
                        Slot **where) {
    Py_INCREF(item);
    int found = -1;
    Py_hash_t hash = PyObject_Hash(item);
    if (hash != -1) {
        Slot *slot = table_find(table->slots, mask, item, hash, &found);
        if (slot == NULL) {
            found = -1;
        } else {
            if (!found && insert) {
                Py_INCREF(item);
                slot->key = item;
                slot->hash = hash;
                slot->credited = 0;
            }
            *where = slot;
        }
    }
    Py_DECREF(item);
    return found;
}

/* One row: fill its table from `relevant`, mark `out` (width bytes). Returns the number of
 * distinct relevant items, or -1 on an error. */
static Py_ssize_t judge_row(Table *table, PyObject *retrieved, PyObject *relevant,
                            Py_ssize_t width, char *out) {
    PyObject *rel = PySequence_Fast(relevant, "relevant items must be a sequence");
    if (rel == NULL) {
        return -1;
    }
    PyObject *ret = PySequence_Fast(retrieved, "retrieved items must be a sequence");
    if (ret == NULL) {
        Py_DECREF(rel);
        return -1;
    }
    Py_ssize_t distinct = -1, count = 0;
    Py_ssize_t mask = table_reserve(table, PySequence_Fast_GET_SIZE(rel));
    if (mask < 0) {
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(ret) > width) {
        PyErr_SetString(PyExc_ValueError, "a retrieved list is longer than the width");
        goto release;
    }
    Slot *slot = NULL;
    /* sizes are re-read every step: a user's __eq__ may have changed a list */
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(rel); k++) {
        int found = table_lookup(table, mask, PySequence_Fast_GET_ITEM(rel, k), 1, &slot);
        if (found < 0) {
            goto release;
        }
        count += !found;
        if (count > (mask + 1) / 2) { /* grown past the room reserved for it */
            PyErr_SetString(PyExc_RuntimeError, "relevant items changed while judged");
            goto release;
        }
    }
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(ret) && j < width; j++) {
        int found = table_lookup(table, mask, PySequence_Fast_GET_ITEM(ret, j), 0, &slot);
        if (found < 0) {
            goto release;
        }
        if (found && !slot->credited) {
            slot->credited = 1;
            out[j] = 1;
        }
    }
    distinct = count;
release:
    table_release(table, mask);
done:
    Py_DECREF(ret);
    Py_DECREF(rel);
    return distinct;
}

static PyObject *judge(PyObject *module, PyObject *args) {
    PyObject *retrieved, *relevant;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOn:judge", &retrieved, &relevant, &width)) {
        return NULL;
    }
    PyObject *rows_ret = PySequence_Fast(retrieved, "retrieved must be a sequence");
    if (rows_ret == NULL) {
        return NULL;
    }
    PyObject *rows_rel = PySequence_Fast(relevant, "relevant must be a sequence");
    if (rows_rel == NULL) {
        Py_DECREF(rows_ret);
        return NULL;
    }
    PyObject *result = NULL, *mask = NULL, *counts = NULL;
    Table table = {NULL, 0};
    Py_ssize_t rows = PySequence_Fast_GET_SIZE(rows_ret);
    if (PySequence_Fast_GET_SIZE(rows_rel) != rows) {
        PyErr_SetString(PyExc_ValueError, "retrieved and relevant differ in length");
        goto done;
    }
    if (width < 0 || (rows > 0 && width > PY_SSIZE_T_MAX / rows)) {
        PyErr_SetString(PyExc_ValueError, "bad width");
        goto done;
    }
    mask = PyByteArray_FromStringAndSize(NULL, rows * width);
    counts = PyByteArray_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(int64_t));
    if (mask == NULL || counts == NULL) {
        goto done;
    }
    char *out = PyByteArray_AS_STRING(mask);
    int64_t *n_relevant = (int64_t *)PyByteArray_AS_STRING(counts);
    memset(out, 0, (size_t)(rows * width));
    PyObject **ret_rows = PySequence_Fast_ITEMS(rows_ret);
    PyObject **rel_rows = PySequence_Fast_ITEMS(rows_rel);
    for (Py_ssize_t i = 0; i < rows; i++) {
        Py_ssize_t distinct = judge_row(&table, ret_rows[i], rel_rows[i], width, out + i * width);
        if (distinct < 0) {
            goto done;
        }
        n_relevant[i] = (int64_t)distinct;
    }
    result = PyTuple_Pack(2, mask, counts);
done:
    PyMem_Free(table.slots);
    Py_XDECREF(mask);
    Py_XDECREF(counts);
    Py_DECREF(rows_rel);
    Py_DECREF(rows_ret);
    return result;
}

static PyMethodDef methods[] = {
    {"judge", judge, METH_VARARGS,
     "judge(retrieved, relevant, width) -> (mask, n_relevant): exact relevance of every row."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_exact", "Exact relevance judgements, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__exact(void) { return PyModule_Create(&module); }
