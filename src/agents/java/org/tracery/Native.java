// The JNI library's entry points, and how the jar finds that library (libtracery-java.so).
package org.tracery;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/** libtracery-java.so: loaded once, from the first place that has it (see {@link #load}). */
final class Native {
	/** The most fields an event has (TRACERY_EVENT_MAX_FIELDS of tracery/runtime_event.h). */
	static final int MAX_FIELDS = 16;

	private static final String LIBRARY = "tracery-java";

	static {
		load();
	}

	private Native() {
	}

	/**
	 * Loads the JNI library from, in order: the path in the system property {@code org.tracery.library}; the
	 * library directory of the install the jar belongs to (share/java/ → the library directory, as `cmake
	 * --install` lays them out); the jar's own directory (the build tree); java.library.path.
	 */
	private static void load() {
		String explicit = System.getProperty("org.tracery.library");
		if (explicit != null) {
			System.load(new File(explicit).getAbsolutePath());
			return;
		}
		List<String> tried = new ArrayList<>();
		File jarDir = jarDirectory();
		if (jarDir != null) {
			String file = System.mapLibraryName(LIBRARY);
			for (File candidate : new File[] {new File(new File(jarDir, InstallLayout.LIBDIR_FROM_JAR_DIR), file),
							  new File(jarDir, file)}) {
				if (candidate.isFile()) {
					System.load(candidate.getAbsolutePath());
					return;
				}
				tried.add(candidate.getPath());
			}
		}
		try {
			System.loadLibrary(LIBRARY);
		} catch (UnsatisfiedLinkError e) {
			UnsatisfiedLinkError error = new UnsatisfiedLinkError(
				"tracery: no " + System.mapLibraryName(LIBRARY) + " in " + tried +
				" nor java.library.path; set -Dorg.tracery.library=PATH (" + e.getMessage() + ")");
			error.initCause(e);
			throw error;
		}
	}

	private static File jarDirectory() {
		try {
			var source = Native.class.getProtectionDomain().getCodeSource();
			if (source == null)
				return null;
			File location = new File(source.getLocation().toURI());
			return location.isFile() ? location.getParentFile() : null;
		} catch (Exception e) {
			return null;
		}
	}

	/** A handle of libtracery's event; IllegalArgumentException with libtracery's reason if refused. */
	static native long define(String provider, String name, String[] fieldNames, int[] fieldKinds);

	/** The event's enabled byte, in place. */
	static native ByteBuffer enabledByte(long handle);

	/** The address of the event's enabled byte, which lives until the process exits. */
	static native long enabledAddress(long handle);

	/** The address of a direct buffer's memory. */
	static native long address(ByteBuffer buffer);

	/**
	 * Records the event from the values at address, capacity bytes of native memory: count numbers (8 bytes each,
	 * the machine's order; field i's integer, boolean (0 or 1), double (its raw bits) or string (offset in the
	 * text, high 32 bits, and length, low 32 bits, of its UTF-8)) in the first 8 * MAX_FIELDS bytes, then
	 * textLength bytes of text. IllegalArgumentException with libtracery's reason if it refuses them.
	 */
	static native void emit(long handle, long address, int capacity, int textLength, int count);
}
