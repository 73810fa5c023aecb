// An event defined at run time: its handle in libtracery, the enabled check that makes no JNI call, emit, and
// the thread's writer that takes the values one by one without boxing them.
package org.tracery;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
	/** The most UTF-8 bytes the strings of one event may take (TRACERY_EVENT_MAX_PAYLOAD). */
	static final int MAX_TEXT = 65536;

	/**
	 * sun.misc.Unsafe's getByteVolatile(null, address), bound to the Unsafe instance, where the JDK lets a
	 * library read memory with it quietly (Java 17 to 22: Java 23 deprecates Unsafe's memory access and 24 warns
	 * at its first use) and unless -Dorg.tracery.enabledRead=buffer says not to; else null. Found by reflection:
	 * nothing ties the jar to sun.misc at compile time. A constant method handle, so the JIT inlines the read
	 * itself: a load and a compare, no check.
	 */
	private static final MethodHandle READ_BYTE = byteReader();

	private static MethodHandle byteReader() {
		if (Runtime.version().feature() > 22 || "buffer".equals(System.getProperty("org.tracery.enabledRead")))
			return null;
		try {
			Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
			java.lang.reflect.Field instance = unsafeClass.getDeclaredField("theUnsafe");
			instance.setAccessible(true);
			return MethodHandles.lookup()
				.findVirtual(unsafeClass, "getByteVolatile",
					     MethodType.methodType(byte.class, Object.class, long.class))
				.bindTo(instance.get(null));
		} catch (ReflectiveOperationException | RuntimeException e) {
			return null;
		}
	}

	private final String name;
	private final Field[] fields;
	private final long handle;
	/** libtracery's enabled byte of this event, in place: its address, and a buffer over it. */
	private final long enabledAddress;
	private final ByteBuffer enabledByte;

	private static final ThreadLocal<Writer> WRITERS = ThreadLocal.withInitial(Writer::new);

	private TraceryEvent(String name, Field[] fields, long handle) {
		this.name = name;
		this.fields = fields;
		this.handle = handle;
		this.enabledAddress = Native.enabledAddress(handle);
		this.enabledByte = Native.enabledByte(handle).asReadOnlyBuffer();
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
		return new TraceryEvent(name, copy, handle);
	}

	/**
	 * Whether a session records this event now: one read of libtracery's enabled byte, no JNI call, never
	 * hoisted out of a loop by the JIT (a volatile read, or the buffer's read behind an acquire fence; no
	 * instruction of its own on x86-64).
	 */
	public boolean enabled() {
		if (READ_BYTE != null) {
			try {
				return (byte)READ_BYTE.invokeExact((Object)null, enabledAddress) != 0;
			} catch (Throwable e) {
				throw new AssertionError(e); // a read of memory that lives as long as the process
			}
		}
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
		// A value that is not a String becomes one (its toString, which may emit events of its own) before the
		// thread's writer is taken.
		Object[] checked = values;
		if (on) {
			for (int i = 0; i < fields.length; i++) {
				if (fields[i].kind == Field.Kind.STRING && !(values[i] instanceof String)) {
					if (checked == values)
						checked = values.clone();
					checked[i] = String.valueOf(values[i]);
				}
			}
		}
		Writer w = WRITERS.get().begin(this, on);
		for (int i = 0; i < fields.length; i++) {
			Object value = checked[i];
			switch (fields[i].kind) {
			case INT8:
			case INT16:
			case INT32:
			case INT64:
				if (!(value instanceof Long || value instanceof Integer || value instanceof Short ||
				      value instanceof Byte))
					throw w.refuse(wrongType(i, value, "a Long, Integer, Short or Byte"));
				w.integer(((Number)value).longValue());
				break;
			case FLOAT64:
				if (!(value instanceof Number))
					throw w.refuse(wrongType(i, value, "a Number"));
				w.float64(((Number)value).doubleValue());
				break;
			case BOOL:
				if (!(value instanceof Boolean))
					throw w.refuse(wrongType(i, value, "a Boolean"));
				w.bool((Boolean)value);
				break;
			case STRING:
				w.string(on ? (String)value : "");
				break;
			}
		}
		w.emit();
	}

	/**
	 * The thread's writer, begun for this event: it takes one value per field, in field order, with no boxing,
	 * then {@link Writer#emit} records them. While no session records the event (as {@link #enabled} said when
	 * the writer began) it checks the values and records nothing.
	 *
	 * <pre>
	 * if (ev.enabled())
	 * 	ev.writer().integer(42).string("/index.html").emit();
	 * </pre>
	 */
	public Writer writer() {
		return WRITERS.get().begin(this, enabled());
	}

	/**
	 * A thread's values of the event it is writing: numbers[i] is field i's integer, boolean (0 or 1), double
	 * (its raw bits) or, for a string, its UTF-8's offset in text (high 32 bits) and length (low 32 bits). At
	 * {@link #emit} they are copied into the thread's native buffer (the numbers, then the text), whose address
	 * the JNI library reads them at: a call with no JNI call back into Java, no array pinned. One per thread, begun again by each {@link TraceryEvent#writer}:
	 * writing another event on the thread before this one's emit (from a toString, say) ends this one, whose
	 * next value or emit then throws IllegalStateException; a refused value ends it too. Nothing is recorded
	 * then.
	 */
	public static final class Writer {
		/** Bytes of the numbers at the start of the native buffer. */
		private static final int NUMBERS_BYTES = 8 * Native.MAX_FIELDS;

		final long[] numbers = new long[Native.MAX_FIELDS];
		byte[] text = new byte[256];
		/** The native buffer, in the machine's order, and its address. */
		private ByteBuffer direct;
		private long directAddress;
		/** The event being written, null once emitted or refused. */
		private TraceryEvent event;
		private int field;
		private int textLength;
		private boolean on;
		/** Slots of the cache of {@link #recurringString} (a power of 2). */
		private static final int RECURRING = 32;
		/** The strings of recurringString and their UTF-8, by the string's hash; found by identity. */
		private final String[] recurring = new String[RECURRING];
		private final Utf8String[] recurringUtf8 = new Utf8String[RECURRING];
		/** The current thread's name and its UTF-8, for {@link #threadName}. */
		private String threadName;
		private Utf8String threadNameUtf8;

		private Writer() {
		}

		Writer begin(TraceryEvent ev, boolean enabled) {
			event = ev;
			on = enabled;
			field = 0;
			textLength = 0;
			return this;
		}

		/** The next field, whose kind the caller checks. */
		private Field next() {
			TraceryEvent ev = event;
			if (ev == null)
				throw noEvent();
			if (field == ev.fields.length)
				throw refuse(new IllegalArgumentException("event " + ev.name + " has " + ev.fields.length +
									  " fields, got more values"));
			return ev.fields[field];
		}

		private static IllegalStateException noEvent() {
			return new IllegalStateException("tracery: no event is being written on this thread (each value and "
							 + "emit follow TraceryEvent.writer(), with no other event written in between)");
		}

		IllegalArgumentException refuse(IllegalArgumentException e) {
			event = null;
			return e;
		}

		private IllegalArgumentException notA(Field f, String what) {
			return refuse(new IllegalArgumentException("field " + f.name + " of event " + event.name + " is " + f +
								   ", not " + what));
		}

		/** An integer field's value (int8 ... int64), which must fit its width. */
		public Writer integer(long x) {
			Field f = next();
			int bits = f.kind.bits;
			if (!f.kind.integral)
				throw notA(f, "an integer");
			if (bits < 64 && (x < -(1L << (bits - 1)) || x >= (1L << (bits - 1))))
				throw refuse(new IllegalArgumentException("field " + f.name + " of event " + event.name + " is " +
									  f + ": " + x + " does not fit"));
			numbers[field++] = x;
			return this;
		}

		/** A float64 field's value. */
		public Writer float64(double x) {
			Field f = next();
			if (f.kind != Field.Kind.FLOAT64)
				throw notA(f, "a float64");
			numbers[field++] = Double.doubleToRawLongBits(x);
			return this;
		}

		/** A bool field's value. */
		public Writer bool(boolean x) {
			Field f = next();
			if (f.kind != Field.Kind.BOOL)
				throw notA(f, "a bool");
			numbers[field++] = x ? 1 : 0;
			return this;
		}

		/** A string field's value (null: "null"), written as UTF-8 while the event is enabled. */
		public Writer string(String s) {
			Field f = next();
			if (f.kind != Field.Kind.STRING)
				throw notA(f, "a string");
			if (on) {
				String value = s == null ? "null" : s;
				long needed = textLength + 3L * value.length();
				if (needed > text.length && text.length < MAX_TEXT)
					text = Arrays.copyOf(text, (int)Math.min(Math.max(needed, 2L * text.length), MAX_TEXT));
				int end = Utf8String.encode(value, text, textLength, text.length);
				if (end < 0)
					throw tooLong();
				put(end);
			} else {
				field++;
			}
			return this;
		}

		/** A string field's value, already UTF-8. */
		public Writer string(Utf8String s) {
			Field f = next();
			if (f.kind != Field.Kind.STRING)
				throw notA(f, "a string");
			if (on) {
				byte[] bytes = s.bytes;
				int end = textLength + bytes.length;
				if (end > text.length) {
					if (end > MAX_TEXT)
						throw tooLong();
					text = Arrays.copyOf(text, Math.min(Math.max(end, 2 * text.length), MAX_TEXT));
				}
				System.arraycopy(bytes, 0, text, textLength, bytes.length);
				put(end);
			} else {
				field++;
			}
			return this;
		}

		/**
		 * A string field's value that is likely the very String given before (a class or method name, a
		 * constant message): its UTF-8 is kept in a small cache of the thread, found by the string's identity
		 * (the slot by its hash, which a String computes once), and encoded again only when another string took
		 * its slot. No more than {@link #string(String)} for another string: the hash, a comparison.
		 */
		public Writer recurringString(String s) {
			if (s == null || s.length() > 256 || !on)
				return string(s);
			int slot = s.hashCode() & (RECURRING - 1);
			Utf8String utf8;
			if (recurring[slot] == s) {
				utf8 = recurringUtf8[slot];
			} else {
				utf8 = Utf8String.of(s);
				recurring[slot] = s;
				recurringUtf8[slot] = utf8;
			}
			return string(utf8);
		}

		/** A string field's value: the name of the thread writing, its UTF-8 kept while the name stays. */
		public Writer threadName() {
			String current = Thread.currentThread().getName();
			if (current != threadName) {
				threadNameUtf8 = Utf8String.of(current);
				threadName = current;
			}
			return string(threadNameUtf8);
		}

		private void put(int end) {
			numbers[field++] = (long)textLength << 32 | (end - textLength);
			textLength = end;
		}

		private IllegalArgumentException tooLong() {
			return refuse(new IllegalArgumentException("event " + event.name + ": its strings take more than " +
								   MAX_TEXT + " bytes of UTF-8"));
		}

		/**
		 * Records the values written, one per field.
		 *
		 * @throws IllegalArgumentException fewer values than fields, or libtracery refused them
		 * @throws IllegalStateException    no event is being written (see the class's comment)
		 */
		public void emit() {
			TraceryEvent ev = event;
			if (ev == null)
				throw noEvent();
			event = null;
			if (field != ev.fields.length)
				throw new IllegalArgumentException("event " + ev.name + " has " + ev.fields.length + " fields, got " +
								   field + " values");
			if (!on)
				return;
			ByteBuffer buffer = direct;
			if (buffer == null || buffer.capacity() < NUMBERS_BYTES + textLength) {
				buffer = ByteBuffer.allocateDirect(NUMBERS_BYTES + Math.max(text.length, 256))
						 .order(ByteOrder.nativeOrder());
				directAddress = Native.address(buffer);
				direct = buffer;
			}
			for (int i = 0; i < field; i++)
				buffer.putLong(8 * i, numbers[i]);
			buffer.put(NUMBERS_BYTES, text, 0, textLength);
			Native.emit(ev.handle, directAddress, buffer.capacity(), textLength, field);
			Reference.reachabilityFence(buffer); // its memory is read until emit returns
		}
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
