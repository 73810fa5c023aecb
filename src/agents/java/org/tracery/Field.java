// A field of an event defined at run time (TraceryEvent.define): its name and kind, one factory per kind.
package org.tracery;

/** One field of a {@link TraceryEvent}: its name and the kind of value it records. */
public final class Field {
	/** The kinds of value a field records, and what Java value {@link TraceryEvent#emit} takes for each. */
	public enum Kind {
		/** a signed 8-bit integer: any integral {@link Number} that fits */
		INT8(8, true),
		/** a signed 16-bit integer: any integral {@link Number} that fits */
		INT16(16, true),
		/** a signed 32-bit integer: any integral {@link Number} that fits */
		INT32(32, true),
		/** a signed 64-bit integer: any integral {@link Number} */
		INT64(64, true),
		/** an IEEE 754 double: any {@link Number} */
		FLOAT64(64, false),
		/** a boolean: a {@link Boolean} */
		BOOL(8, false),
		/** a UTF-8 string: any object, as {@link String#valueOf(Object)} writes it (null: "null") */
		STRING(0, false);

		final int bits;
		final boolean integral;

		Kind(int bits, boolean integral) {
			this.bits = bits;
			this.integral = integral;
		}
	}

	final String name;
	final Kind kind;

	private Field(String name, Kind kind) {
		if (name == null)
			throw new NullPointerException("field name");
		this.name = name;
		this.kind = kind;
	}

	public static Field int8(String name) {
		return new Field(name, Kind.INT8);
	}

	public static Field int16(String name) {
		return new Field(name, Kind.INT16);
	}

	public static Field int32(String name) {
		return new Field(name, Kind.INT32);
	}

	public static Field int64(String name) {
		return new Field(name, Kind.INT64);
	}

	public static Field float64(String name) {
		return new Field(name, Kind.FLOAT64);
	}

	public static Field bool(String name) {
		return new Field(name, Kind.BOOL);
	}

	public static Field string(String name) {
		return new Field(name, Kind.STRING);
	}

	public String name() {
		return name;
	}

	public Kind kind() {
		return kind;
	}

	@Override
	public String toString() {
		return kind.name().toLowerCase() + " " + name;
	}
}
