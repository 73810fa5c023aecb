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

	/**
	 * Each thread's values of the event it emits, handed to the JNI library: numbers[i] is field i's integer,
	 * boolean (0 or 1), double (its raw bits) or, for a string, its UTF-8's offset in text (high 32 bits) and
	 * length (low 32 bits).
	 */
	private static final class Values {
		/** The most UTF-8 bytes the strings of one event may take (TRACERY_EVENT_MAX_PAYLOAD). */
		static final int MAX_TEXT = 65536;

		final long[] numbers = new long[Native.MAX_FIELDS];
		byte[] text = new byte[256];

		/**
		 * Writes s's UTF-8 at text[at] (a surrogate pair as one 4-byte character, a lone surrogate as U+FFFD);
		 * returns where it ends, or -1 if the event's strings would take more than MAX_TEXT bytes.
		 */
		int append(String s, int at) {
			int n = s.length();
			long needed = at + 3L * n + 4;
			if (needed > text.length && text.length < MAX_TEXT + 4)
				text = Arrays.copyOf(text, (int)Math.min(Math.max(needed, 2L * text.length), MAX_TEXT + 4));
			byte[] out = text;
			int limit = Math.min(out.length, MAX_TEXT + 4) - 4;
			for (int i = 0; i < n; i++) {
				if (at > limit)
					return -1;
				char c = s.charAt(i);
				if (c < 0x80) {
					out[at++] = (byte)c;
				} else if (c < 0x800) {
					out[at++] = (byte)(0xC0 | (c >> 6));
					out[at++] = (byte)(0x80 | (c & 0x3F));
				} else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
					int code = Character.toCodePoint(c, s.charAt(++i));
					out[at++] = (byte)(0xF0 | (code >> 18));
					out[at++] = (byte)(0x80 | ((code >> 12) & 0x3F));
					out[at++] = (byte)(0x80 | ((code >> 6) & 0x3F));
					out[at++] = (byte)(0x80 | (code & 0x3F));
				} else {
					int code = Character.isSurrogate(c) ? 0xFFFD : c;
					out[at++] = (byte)(0xE0 | (code >> 12));
					out[at++] = (byte)(0x80 | ((code >> 6) & 0x3F));
					out[at++] = (byte)(0x80 | (code & 0x3F));
				}
			}
			return at > MAX_TEXT ? -1 : at;
		}
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
		return new TraceryEvent(name, copy, handle, Native.enabledByte(handle).asReadOnlyBuffer());
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
		boolean on = enabled();
		Values v = VALUES.get();
		int textLength = 0;
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
				if (on) {
					int end = v.append(String.valueOf(value), textLength);
					if (end < 0)
						throw new IllegalArgumentException(
							"event " + name + ": its strings take more than " + Values.MAX_TEXT + " bytes of UTF-8");
					v.numbers[i] = (long)textLength << 32 | (end - textLength);
					textLength = end;
				}
				break;
			}
		}
		if (on)
			Native.emit(handle, v.numbers, v.text, textLength, fields.length);
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
