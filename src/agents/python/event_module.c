/*
 * event_module.c — tracery._tracery, the CPython extension of the `tracery` package.
 *
 * Defines `Event`, a typed event made at run time through libtracery's run-time event API
 * (tracery/runtime_event.h), and the field types that name a width (`u8` ... `s64`, `f32`, `f64`).
 * `Event("myapp:request", id=int, path=str)` defines the event once per process (the same name with the
 * same fields gives back the same descriptor); `ev.emit(...)` converts its arguments into the event's
 * field values and records them; `ev.enabled` is one load of the descriptor's enabled byte.
 *
 * The GIL is held while a value is converted (the objects are Python's) and also through the record
 * itself: recording never blocks (a full sub-buffer discards or overwrites, with a count), and it is
 * shorter than releasing and taking the GIL again. The module refuses to load in a sub-interpreter:
 * its types are static and its events are the process's, shared by every interpreter.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <tracery/runtime_event.h>

/* The largest number of fields an event may have (the runtime's limit). */
#define EVENT_MAX_FIELDS TRACERY_EVENT_MAX_FIELDS

/* ---- Field types ---- */

/* A field type that Python code names: tracery.u8 ... tracery.f64 (and the ones int, float, bool,
 * str, bytes and Enum classes map to). */
typedef struct {
	PyObject_HEAD;
	uint8_t type; /* enum tracery_field_type */
	const char *name;
} FieldTypeObject;

static PyObject *field_type_repr(PyObject *self)
{
	return PyUnicode_FromFormat("tracery.%s", ((FieldTypeObject *)self)->name);
}

static PyTypeObject FieldType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracery.FieldType",
	.tp_basicsize = sizeof(FieldTypeObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A field's type with an explicit width: tracery.u8 ... tracery.s64, tracery.f32, tracery.f64.",
	.tp_repr = field_type_repr,
};

static FieldTypeObject explicit_types[] = {
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_U8, "u8"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_U16, "u16"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_U32, "u32"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_U64, "u64"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_S8, "s8"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_S16, "s16"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_S32, "s32"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_S64, "s64"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_FLOAT, "f32"},
	{PyObject_HEAD_INIT(&FieldType) TRACERY_TYPE_DOUBLE, "f64"},
};

/* ---- Events ---- */

typedef struct {
	PyObject_HEAD;
	struct tracery_runtime_event *handle; /* lives until the process exits */
	PyObject *name;                       /* "provider:name" */
	PyObject *field_names;                /* tuple of interned str, in field order */
	PyObject *enum_classes;               /* tuple: the Enum class of each ENUM field, else None */
	uint32_t nr_fields;
	uint8_t types[EVENT_MAX_FIELDS];      /* enum tracery_field_type */
	uint8_t elem_types[EVENT_MAX_FIELDS]; /* ENUM: the integer type */
} EventObject;

static PyTypeObject EventType;

/* The module's references, set once at import (the module is loaded in the main interpreter only). */
static PyObject *enum_base_class; /* enum.Enum */
static PyObject *value_attr;      /* "value" */

/* Whether cls is a subclass of enum.Enum. */
static int is_enum_class(PyObject *cls) { return PyType_Check(cls) && PyObject_IsSubclass(cls, enum_base_class) == 1; }

/* The field type a kwarg of Event() names: int, float, bool, str, bytes, an Enum class, a FieldType. */
static int field_type_of(PyObject *spec, uint8_t *type, uint8_t *elem_type)
{
	*elem_type = 0;
	if (Py_IS_TYPE(spec, &FieldType)) {
		*type = ((FieldTypeObject *)spec)->type;
	} else if (spec == (PyObject *)&PyBool_Type) {
		*type = TRACERY_TYPE_BOOL;
	} else if (spec == (PyObject *)&PyLong_Type) {
		*type = TRACERY_TYPE_S64;
	} else if (spec == (PyObject *)&PyFloat_Type) {
		*type = TRACERY_TYPE_DOUBLE;
	} else if (spec == (PyObject *)&PyUnicode_Type) {
		*type = TRACERY_TYPE_STRING;
	} else if (spec == (PyObject *)&PyBytes_Type) {
		*type = TRACERY_TYPE_BLOB;
	} else if (is_enum_class(spec)) {
		*type = TRACERY_TYPE_ENUM;
		*elem_type = TRACERY_TYPE_S64;
	} else {
		return -1;
	}
	return 0;
}

/* The labels of an Enum class whose values are all integers, as the runtime's enum entries; the label
 * strings stay alive in `keep` (a list the caller holds until the event is defined). */
static struct tracery_enum_entry *enum_entries_of(PyObject *cls, PyObject *field, PyObject *keep, uint32_t *count)
{
	PyObject *members = PyObject_GetAttrString(cls, "__members__");
	if (!members)
		return NULL;
	PyObject *items = PyMapping_Items(members);
	Py_DECREF(members);
	if (!items)
		return NULL;
	Py_ssize_t n = PyList_GET_SIZE(items);
	if (n == 0 || n > UINT32_MAX) {
		PyErr_Format(PyExc_ValueError, "field %.200R: the Enum class %.200R has no member", field, cls);
		Py_DECREF(items);
		return NULL;
	}
	struct tracery_enum_entry *entries = PyMem_Calloc((size_t)n, sizeof(*entries));
	if (!entries) {
		Py_DECREF(items);
		PyErr_NoMemory();
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PyList_GET_ITEM(items, i);
		PyObject *label = PyTuple_GET_ITEM(item, 0);
		PyObject *value = PyObject_GetAttr(PyTuple_GET_ITEM(item, 1), value_attr);
		long long v = value && PyLong_Check(value) ? PyLong_AsLongLong(value) : -1;
		if (!value || !PyLong_Check(value) || (v == -1 && PyErr_Occurred())) {
			if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
				PyErr_Clear();
				PyErr_Format(
					PyExc_TypeError,
					"field %.200R: the member %.200U of %.200R has a value that is not a 64-bit integer",
					field, label, cls);
			}
			Py_XDECREF(value);
			PyMem_Free(entries);
			Py_DECREF(items);
			return NULL;
		}
		Py_DECREF(value);
		entries[i].label = PyUnicode_AsUTF8(label);
		if (!entries[i].label || PyList_Append(keep, label) < 0) {
			PyMem_Free(entries);
			Py_DECREF(items);
			return NULL;
		}
		entries[i].start = entries[i].end = v;
	}
	Py_DECREF(items);
	*count = (uint32_t)n;
	return entries;
}

/* Raises the error of a failed tracery_event_define (errno `error`), with the runtime's reason. */
static void raise_define_error(int error)
{
	PyObject *type = error == ENOMEM ? PyExc_MemoryError : error == ENOSPC ? PyExc_OSError : PyExc_ValueError;
	PyErr_SetString(type, tracery_last_error());
}

static PyObject *event_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	PyObject *name;
	if (!PyArg_ParseTuple(args, "U:Event", &name))
		return NULL;
	Py_ssize_t nr_fields = kwargs ? PyDict_GET_SIZE(kwargs) : 0;
	if (nr_fields > EVENT_MAX_FIELDS) {
		PyErr_Format(PyExc_ValueError, "event %.200R: %zd fields, at most %d", name, nr_fields,
		             EVENT_MAX_FIELDS);
		return NULL;
	}
	const char *full = PyUnicode_AsUTF8(name);
	if (!full)
		return NULL;
	const char *colon = strchr(full, ':');
	if (!colon || colon == full || colon[1] == '\0') {
		PyErr_Format(PyExc_ValueError, "event %.200R: the name must be PROVIDER:NAME", name);
		return NULL;
	}
	size_t provider_len = (size_t)(colon - full);
	if (provider_len > TRACERY_EVENT_MAX_PROVIDER) {
		PyErr_Format(PyExc_ValueError, "event %.200R: a provider of %zu bytes, at most %d", name, provider_len,
		             TRACERY_EVENT_MAX_PROVIDER);
		return NULL;
	}
	EventObject *self = (EventObject *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	self->nr_fields = (uint32_t)nr_fields;
	self->field_names = PyTuple_New(nr_fields);
	self->enum_classes = PyTuple_New(nr_fields);
	PyObject *keep = PyList_New(0); /* the strings the descriptors point to, until define returns */
	struct tracery_event_field fields[EVENT_MAX_FIELDS];
	struct tracery_enum_entry *entries[EVENT_MAX_FIELDS] = {0};
	Py_ssize_t defined = 0;
	int ok = self->field_names && self->enum_classes && keep;
	PyObject *key, *spec;
	Py_ssize_t pos = 0;
	while (ok && PyDict_Next(kwargs, &pos, &key, &spec)) {
		Py_ssize_t i = defined++;
		memset(&fields[i], 0, sizeof(fields[i]));
		if (field_type_of(spec, &self->types[i], &self->elem_types[i]) < 0) {
			PyErr_Format(
				PyExc_TypeError,
				"field %.200R: %.200R is not a field type (int, float, bool, str, bytes, an Enum class "
				"or tracery.u8 ... tracery.s64, tracery.f32, tracery.f64)",
				key, spec);
			ok = 0;
			break;
		}
		Py_INCREF(key);
		PyUnicode_InternInPlace(&key);
		PyTuple_SET_ITEM(self->field_names, i, key);
		fields[i].name = PyUnicode_AsUTF8(key);
		if (!fields[i].name) { /* a str that is not UTF-8 (a lone surrogate) */
			ok = 0;
			break;
		}
		fields[i].type = self->types[i];
		fields[i].elem_type = self->elem_types[i];
		PyObject *enum_class = Py_None;
		if (self->types[i] == TRACERY_TYPE_ENUM) {
			uint32_t count = 0;
			entries[i] = enum_entries_of(spec, key, keep, &count);
			if (!entries[i]) {
				ok = 0;
				break;
			}
			fields[i].enum_entries = entries[i];
			fields[i].nr_enum_entries = count;
			enum_class = spec;
		}
		Py_INCREF(enum_class);
		PyTuple_SET_ITEM(self->enum_classes, i, enum_class);
	}
	if (ok) {
		char provider[TRACERY_EVENT_MAX_PROVIDER + 1];
		memcpy(provider, full, provider_len);
		provider[provider_len] = '\0';
		self->handle = tracery_event_define(provider, colon + 1, fields, self->nr_fields);
		if (!self->handle) {
			raise_define_error(errno);
			ok = 0;
		} else {
			Py_INCREF(name);
			self->name = name;
		}
	}
	for (Py_ssize_t i = 0; i < defined; i++)
		PyMem_Free(entries[i]);
	Py_XDECREF(keep);
	if (!ok) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static void event_dealloc(PyObject *self)
{
	EventObject *ev = (EventObject *)self;
	/* The handle is the process's: it is never freed (another Event may hold it). */
	Py_XDECREF(ev->name);
	Py_XDECREF(ev->field_names);
	Py_XDECREF(ev->enum_classes);
	Py_TYPE(self)->tp_free(self);
}

/* Whether the event is enabled now: one relaxed load. */
static inline int event_enabled(const EventObject *ev) { return tracery_event_enabled(ev->handle); }

static PyObject *event_get_enabled(PyObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(event_enabled((EventObject *)self));
}

static PyObject *event_repr(PyObject *self)
{
	EventObject *ev = (EventObject *)self;
	return PyUnicode_FromFormat("<tracery.Event %R fields=%R>", ev->name, ev->field_names);
}

/* An integer value for a field of integer type `type`, within its bounds. */
static int integer_value(PyObject *value, uint8_t type, struct tracery_value *out, EventObject *ev, uint32_t i)
{
	PyObject *field = PyTuple_GET_ITEM(ev->field_names, i);
	if (!PyLong_Check(value)) {
		PyErr_Format(PyExc_TypeError, "%U: field %R takes an int, not %.100s", ev->name, field,
		             Py_TYPE(value)->tp_name);
		return -1;
	}
	if (type <= TRACERY_TYPE_U64) {
		static const unsigned long long max[] = {UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX};
		unsigned long long u = PyLong_AsUnsignedLongLong(value);
		int overflow = u == (unsigned long long)-1 && PyErr_Occurred();
		if (overflow && !PyErr_ExceptionMatches(PyExc_OverflowError))
			return -1;
		if (overflow || u > max[type - TRACERY_TYPE_U8]) {
			PyErr_Clear();
			PyErr_Format(PyExc_OverflowError, "%U: the value does not fit field %R (0 to %llu)", ev->name,
			             field, max[type - TRACERY_TYPE_U8]);
			return -1;
		}
		out->v.u64 = u;
		return 0;
	}
	static const long long min[] = {INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
	static const long long max[] = {INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
	int overflow = 0;
	long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (overflow || v < min[type - TRACERY_TYPE_S8] || v > max[type - TRACERY_TYPE_S8]) {
		PyErr_Format(PyExc_OverflowError, "%U: the value does not fit field %R (%lld to %lld)", ev->name, field,
		             min[type - TRACERY_TYPE_S8], max[type - TRACERY_TYPE_S8]);
		return -1;
	}
	out->v.i64 = v;
	return 0;
}

/* The buffers an emit holds while it records (blob fields). */
struct held_buffers {
	Py_buffer views[EVENT_MAX_FIELDS];
	uint32_t count;
};

/* The value of field i from `value` (NULL: the field was not given, its zero value). */
static int field_value(EventObject *ev, uint32_t i, PyObject *value, struct tracery_value *out,
                       struct held_buffers *held)
{
	uint8_t type = ev->types[i];
	out->v.u64 = 0;
	out->len = 0;
	if (!value)
		return 0; /* 0, 0.0, false; a NULL string records "", a NULL blob of length 0 nothing */
	switch (type) {
	case TRACERY_TYPE_BOOL: {
		int truth = PyObject_IsTrue(value);
		if (truth < 0)
			return -1;
		out->v.u64 = (uint64_t)truth;
		return 0;
	}
	case TRACERY_TYPE_FLOAT:
	case TRACERY_TYPE_DOUBLE:
		out->v.f64 = PyFloat_AsDouble(value);
		if (out->v.f64 == -1.0 && PyErr_Occurred()) {
			if (PyErr_ExceptionMatches(PyExc_TypeError)) {
				PyErr_Clear();
				PyErr_Format(PyExc_TypeError, "%U: field %R takes a float, not %.100s", ev->name,
				             PyTuple_GET_ITEM(ev->field_names, i), Py_TYPE(value)->tp_name);
			}
			return -1;
		}
		return 0;
	case TRACERY_TYPE_STRING: {
		if (!PyUnicode_Check(value)) {
			PyErr_Format(PyExc_TypeError, "%U: field %R takes a str, not %.100s", ev->name,
			             PyTuple_GET_ITEM(ev->field_names, i), Py_TYPE(value)->tp_name);
			return -1;
		}
		Py_ssize_t size;
		const char *utf8 = PyUnicode_AsUTF8AndSize(value, &size); /* cached in the str: no copy */
		if (!utf8)
			return -1;
		/* Longer than a record can hold: the runtime refuses it (EMSGSIZE) with the field's name. */
		out->v.ptr = utf8;
		out->len =
			(size_t)size < TRACERY_VALUE_NUL_TERMINATED ? (uint32_t)size : TRACERY_VALUE_NUL_TERMINATED - 1;
		return 0;
	}
	case TRACERY_TYPE_BLOB: {
		Py_buffer *view = &held->views[held->count];
		if (PyObject_GetBuffer(value, view, PyBUF_SIMPLE) < 0)
			return -1;
		held->count++;
		out->v.ptr = view->buf;
		out->len = (size_t)view->len < TRACERY_VALUE_NUL_TERMINATED ? (uint32_t)view->len
		                                                            : TRACERY_VALUE_NUL_TERMINATED - 1;
		return 0;
	}
	case TRACERY_TYPE_ENUM: {
		PyObject *enum_class = PyTuple_GET_ITEM(ev->enum_classes, i);
		if (!PyObject_TypeCheck(value, (PyTypeObject *)enum_class))
			return integer_value(value, ev->elem_types[i], out, ev, i);
		PyObject *number = PyObject_GetAttr(value, value_attr);
		if (!number)
			return -1;
		int rc = integer_value(number, ev->elem_types[i], out, ev, i);
		Py_DECREF(number);
		return rc;
	}
	default:
		return integer_value(value, type, out, ev, i);
	}
}

/* The index of the field named `key`, or -1 with TypeError. */
static Py_ssize_t field_index(EventObject *ev, PyObject *key)
{
	/* Keyword names at a call site are interned, as the field names are: a pointer match first. */
	for (uint32_t i = 0; i < ev->nr_fields; i++)
		if (PyTuple_GET_ITEM(ev->field_names, i) == key)
			return i;
	for (uint32_t i = 0; i < ev->nr_fields; i++)
		if (PyUnicode_Compare(PyTuple_GET_ITEM(ev->field_names, i), key) == 0)
			return i;
	PyErr_Format(PyExc_TypeError, "%U.emit() got an unexpected keyword argument %.200R (its fields: %R)", ev->name,
	             key, ev->field_names);
	return -1;
}

/* ev.emit(*values, **values): records the event with these field values; the fields not given are
 * zero, False or empty. While the event is disabled, it returns at once, checking nothing. */
static PyObject *event_emit(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	EventObject *ev = (EventObject *)self;
	if (!event_enabled(ev))
		Py_RETURN_NONE;
	Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
	if (nargs > (Py_ssize_t)ev->nr_fields) {
		PyErr_Format(PyExc_TypeError, "%U.emit() takes at most %u values (%zd given)", ev->name, ev->nr_fields,
		             nargs);
		return NULL;
	}
	PyObject *given[EVENT_MAX_FIELDS] = {0};
	for (Py_ssize_t i = 0; i < nargs; i++)
		given[i] = args[i];
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t k = 0; k < nkw; k++) {
		Py_ssize_t i = field_index(ev, PyTuple_GET_ITEM(kwnames, k));
		if (i < 0)
			return NULL;
		if (given[i]) {
			PyErr_Format(PyExc_TypeError, "%U.emit() got two values for field %R", ev->name,
			             PyTuple_GET_ITEM(ev->field_names, i));
			return NULL;
		}
		given[i] = args[nargs + k];
	}
	struct tracery_value values[EVENT_MAX_FIELDS];
	struct held_buffers held;
	held.count = 0;
	PyObject *result = NULL;
	for (uint32_t i = 0; i < ev->nr_fields; i++)
		if (field_value(ev, i, given[i], &values[i], &held) < 0)
			goto out;
	int rc = tracery_event_emit(ev->handle, values, ev->nr_fields);
	if (rc < 0) {
		PyErr_SetString(rc == -ERANGE ? PyExc_OverflowError : PyExc_ValueError, tracery_last_error());
		goto out;
	}
	result = Py_None;
	Py_INCREF(result);
out:
	for (uint32_t b = 0; b < held.count; b++)
		PyBuffer_Release(&held.views[b]);
	return result;
}

static PyMethodDef event_methods[] = {
	{"emit", (PyCFunction)(void (*)(void))event_emit, METH_FASTCALL | METH_KEYWORDS,
         "emit(*values, **values): records the event; fields not given are 0, False, '' or b''.\n"
         "While the event is disabled it returns at once without looking at its arguments."},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef event_getset[] = {
	{"enabled", event_get_enabled, NULL, "True while a session records this event (one load of a byte).", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef event_members[] = {
	{"name", T_OBJECT_EX, offsetof(EventObject, name), READONLY, "PROVIDER:NAME"},
	{"fields", T_OBJECT_EX, offsetof(EventObject, field_names), READONLY, "the field names, in order"},
	{NULL, 0, 0, 0, NULL},
};

static PyTypeObject EventType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracery.Event",
	.tp_basicsize = sizeof(EventObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Event(name, **fields): an event defined at run time.\n\n"
		  "name is 'PROVIDER:NAME'; each keyword names a field and its type: int (64-bit signed), "
		  "float (double), bool, str, bytes (a blob), an Enum class of integer values (an enumeration "
		  "with its labels), or an explicit width: tracery.u8 ... tracery.s64, tracery.f32, "
		  "tracery.f64. Defining the same event again gives the same event; other fields raise "
		  "ValueError.",
	.tp_new = event_new,
	.tp_dealloc = event_dealloc,
	.tp_repr = event_repr,
	.tp_methods = event_methods,
	.tp_getset = event_getset,
	.tp_members = event_members,
};

/* ---- The module ---- */

static int module_exec(PyObject *module)
{
	if (PyInterpreterState_Get() != PyInterpreterState_Main()) {
		PyErr_SetString(PyExc_ImportError,
		                "tracery cannot be imported in a sub-interpreter: its events belong to the "
		                "process, and it supports the main interpreter only");
		return -1;
	}
	if (PyType_Ready(&FieldType) < 0 || PyType_Ready(&EventType) < 0)
		return -1;
	if (!enum_base_class) {
		PyObject *enum_module = PyImport_ImportModule("enum");
		if (!enum_module)
			return -1;
		enum_base_class = PyObject_GetAttrString(enum_module, "Enum");
		Py_DECREF(enum_module);
		value_attr = PyUnicode_InternFromString("value");
		if (!enum_base_class || !value_attr)
			return -1;
	}
	if (PyModule_AddObjectRef(module, "Event", (PyObject *)&EventType) < 0 ||
	    PyModule_AddObjectRef(module, "FieldType", (PyObject *)&FieldType) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(explicit_types) / sizeof(explicit_types[0]); i++)
		if (PyModule_AddObjectRef(module, explicit_types[i].name, (PyObject *)&explicit_types[i]) < 0)
			return -1;
	return PyModule_AddIntConstant(module, "MAX_FIELDS", EVENT_MAX_FIELDS);
}

static PyModuleDef_Slot module_slots[] = {
	{Py_mod_exec, module_exec},
#ifdef Py_mod_multiple_interpreters
	{Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
	{0, NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "tracery._tracery",
	.m_doc = "Events defined at run time, recorded by libtracery (the C part of the tracery package).",
	.m_size = 0,
	.m_slots = module_slots,
};

PyMODINIT_FUNC PyInit__tracery(void) { return PyModuleDef_Init(&module_def); }
