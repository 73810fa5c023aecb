// A string's UTF-8, encoded once for a value recorded often (a logger's name, a level's name), and the encoder
// every string value of an event goes through.
package org.tracery;

import java.util.Arrays;

/**
 * The UTF-8 of a string, encoded once: {@link TraceryEvent.Writer#string(Utf8String)} copies it into an event
 * without encoding it again. A surrogate pair is one 4-byte character, a lone surrogate U+FFFD, as for every
 * string an event records. Immutable.
 */
public final class Utf8String {
	private final String text;
	final byte[] bytes;

	private Utf8String(String text, byte[] bytes) {
		this.text = text;
		this.bytes = bytes;
	}

	/**
	 * The UTF-8 of s.
	 *
	 * @throws IllegalArgumentException s takes more than 64 KiB of UTF-8, more than an event records
	 */
	public static Utf8String of(String s) {
		byte[] out = new byte[(int)Math.min(3L * s.length(), TraceryEvent.MAX_TEXT)];
		int end = encode(s, out, 0, out.length);
		if (end < 0)
			throw new IllegalArgumentException("a string of more than " + TraceryEvent.MAX_TEXT + " bytes of UTF-8");
		return new Utf8String(s, Arrays.copyOf(out, end));
	}

	/** Bytes of UTF-8. */
	public int length() {
		return bytes.length;
	}

	/** The string it was made of. */
	@Override
	public String toString() {
		return text;
	}

	/**
	 * Writes s's UTF-8 at out[at]; returns where it ends, or -1 if it would go beyond out[limit - 1] (out holds
	 * at least limit bytes). Three bytes per UTF-16 unit at most: a caller whose out holds at + 3 * s.length()
	 * bytes is never refused.
	 */
	static int encode(String s, byte[] out, int at, int limit) {
		int n = s.length();
		for (int i = 0; i < n; i++) {
			char c = s.charAt(i);
			if (c < 0x80) {
				if (at >= limit)
					return -1;
				out[at++] = (byte)c;
			} else if (c < 0x800) {
				if (at + 2 > limit)
					return -1;
				out[at++] = (byte)(0xC0 | (c >> 6));
				out[at++] = (byte)(0x80 | (c & 0x3F));
			} else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
				if (at + 4 > limit)
					return -1;
				int code = Character.toCodePoint(c, s.charAt(++i));
				out[at++] = (byte)(0xF0 | (code >> 18));
				out[at++] = (byte)(0x80 | ((code >> 12) & 0x3F));
				out[at++] = (byte)(0x80 | ((code >> 6) & 0x3F));
				out[at++] = (byte)(0x80 | (code & 0x3F));
			} else {
				if (at + 3 > limit)
					return -1;
				int code = Character.isSurrogate(c) ? 0xFFFD : c;
				out[at++] = (byte)(0xE0 | (code >> 12));
				out[at++] = (byte)(0x80 | ((code >> 6) & 0x3F));
				out[at++] = (byte)(0x80 | (code & 0x3F));
			}
		}
		return at;
	}
}
