// An event defined at run time: its handle in libtracery, the enabled check that makes no JNI call, and emit.
package org.tracery;

import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * An event defined while the program runs, recorded like the events compiled into C programs: listed by
 * {@code tracery list -u}, enabled by name patterns, filtered on its fields.
 *
 * <pre>
 * TraceryEvent ev = TraceryEvent.define("myapp:request", Field.int64("id"), Field.string("path"));
 * if (ev.enabled())
 * 	ev.emit(42L, "/index.html");
 * </pre>
 *
 * Defining the same name again with the same fields gives an event with the same handle; with other fields it
 * is refused. Events live until the program exits. Safe to use from any thread.
 */
public final class TraceryEvent {
	private final String name;
	private final Field[] fields;
	private final long handle;
	/** One byte, libtracery's enabled byte of this event, read in place. */
	private final ByteBuffer enabledByte;

	/** Each thread's values of the event it emits, in field order, handed to the JNI library. */
	private static final class Values {
		final long[] numbers = new long[Native.MAX_FIELDS];
		final String[] strings = new String[Native.MAX_FIELDS];
	}

	private static final ThreadLocal<Values> VALUES = ThreadLocal.withInitial(Values::new);

	private TraceryEvent(String name, Field[] fields, long handle, ByteBuffer enabledByte) {
		this.name = name;
		this.fields = fields;
		this.handle = handle;
		this.enabledByte = enabledByte;
	}

	/**
	 * Defines the event {@code provider:name} with these fields (at most 16).
	 *
	 * @throws IllegalArgumentException the name or a field is refused (libtracery's reason in the message), or
	 *                                  the event exists with other fields
	 */
	public static TraceryEvent define(String name, Field... fields) {
		if (name == null)
			throw new NullPointerException("event name");
		Field[] copy = fields.clone();
		if (copy.length > Native.MAX_FIELDS)
			throw new IllegalArgumentException(
				"event " + name + ": " + copy.length + " fields, at most " + Native.MAX_FIELDS);
		int colon = name.indexOf(':');
		if (colon < 0)
			throw new IllegalArgumentException("event name " + name + " is not provider:name");
		String[] names = new String[copy.length];
		int[] kinds = new int[copy.length];
		for (int i = 0; i < copy.length; i++) {
			if (copy[i] == null)
				throw new NullPointerException("field " + i + " of event " + name);
			names[i] = copy[i].name;
			kinds[i] = copy[i].kind.ordinal();
		}
		long handle = Native.define(name.substring(0, colon), name.substring(colon + 1), names, kinds);
		return new TraceryEvent(name, copy, handle, Native.enabledByte(handle));
	}

	/** Whether a session records this event now: one read of libtracery's enabled byte, no JNI call. */
	public boolean enabled() {
		// The fence keeps the JIT from hoisting the read out of a loop (x86: no instruction).
		VarHandle.acquireFence();
		return enabledByte.get(0) != 0;
	}

	/**
	 * Records the event with one value per field, in field order (see {@link Field.Kind} for the Java types each
	 * takes). Does nothing but check the values while no session records the event.
	 *
	 * @throws IllegalArgumentException a value count or type that does not match the fields
	 */
	public void emit(Object... values) {
		if (values.length != fields.length)
			throw new IllegalArgumentException(
				"event " + name + " has " + fields.length + " fields, emit got " + values.length + " values");
		Values v = VALUES.get();
		for (int i = 0; i < fields.length; i++) {
			Object value = values[i];
			switch (fields[i].kind) {
			case INT8:
			case INT16:
			case INT32:
			case INT64:
				v.numbers[i] = integer(i, value);
				break;
			case FLOAT64:
				if (!(value instanceof Number))
					throw wrongType(i, value, "a Number");
				v.numbers[i] = Double.doubleToRawLongBits(((Number)value).doubleValue());
				break;
			case BOOL:
				if (!(value instanceof Boolean))
					throw wrongType(i, value, "a Boolean");
				v.numbers[i] = (Boolean)value ? 1 : 0;
				break;
			case STRING:
				v.strings[i] = String.valueOf(value);
				break;
			}
		}
		if (enabled())
			Native.emit(handle, v.numbers, v.strings, fields.length);
		Arrays.fill(v.strings, 0, fields.length, null);
	}

	private long integer(int i, Object value) {
		if (!(value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte))
			throw wrongType(i, value, "a Long, Integer, Short or Byte");
		long x = ((Number)value).longValue();
		int bits = fields[i].kind.bits;
		if (bits < 64 && (x < -(1L << (bits - 1)) || x >= (1L << (bits - 1))))
			throw new IllegalArgumentException(
				"field " + fields[i].name + " of event " + name + " is " + fields[i] + ": " + x + " does not fit");
		return x;
	}

	private IllegalArgumentException wrongType(int i, Object value, String wanted) {
		return new IllegalArgumentException("field " + fields[i].name + " of event " + name + " takes " + wanted +
						    ", not " + (value == null ? "null" : value.getClass().getName()));
	}

	/** The event's full name, provider:name. */
	public String name() {
		return name;
	}

	public List<Field> fields() {
		return Collections.unmodifiableList(Arrays.asList(fields));
	}

	@Override
	public String toString() {
		return name + Arrays.toString(fields);
	}
}
