// The events of a logging framework's loggers, one per logger up to a bound, shared by the logging handlers
// (org.tracery.jul, org.tracery.log4j2): naming, lookup without a map lookup per record, and the count of
// records of the loggers beyond the bound.
package org.tracery;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The events {@code PROVIDER:LOGGER} of one logging framework's loggers, for the whole process: the first
 * {@link #MAX_LOGGERS} loggers to log get an event of their own (a process's events are never freed); the
 * records of the others are events {@code PROVIDER:_other_loggers}, counted by {@link #otherLoggerRecords}.
 */
public final class LoggerEvents {
	/** Loggers with an event of their own, per provider, in the whole process. */
	public static final int MAX_LOGGERS = 1000;
	/** The name, after the provider, of the event of the records of the loggers beyond MAX_LOGGERS. */
	public static final String OTHER_LOGGERS = "_other_loggers";
	/** The longest event name libtracery takes after the provider (TRACERY_EVENT_MAX_NAME). */
	private static final int MAX_NAME = 200;
	/** Slots of the cache of the loggers seen last (a power of 2). */
	private static final int RECENT = 256;
	private static final String ANONYMOUS_KEY = "\0anonymous";

	/** A logger's event and its name's UTF-8, the value of the records' logger field. */
	public static final class Logger {
		/** The logger's name as the records give it (null: an anonymous logger). */
		final String key;
		/** The event its records are: its own, or PROVIDER:_other_loggers. */
		public final TraceryEvent event;
		/** The logger's name ("" for an anonymous one), encoded. */
		public final Utf8String name;
		final boolean own;

		Logger(String key, TraceryEvent event, Utf8String name, boolean own) {
			this.key = key;
			this.event = event;
			this.name = name;
			this.own = own;
		}
	}

	private final String provider;
	private final Field[] fields;
	/** Logger name → its Logger, the loggers with an event of their own; at most MAX_LOGGERS entries. */
	private final ConcurrentHashMap<String, Logger> loggers = new ConcurrentHashMap<>();
	/** Entries of `loggers`, reserved before each is added. */
	private final AtomicInteger owners = new AtomicInteger();
	/**
	 * The loggers seen last, by their name's hash, found by the name's identity (a logger hands the same String
	 * to each of its records): a record costs no map lookup. Racy on purpose: a Logger's fields are final, so a
	 * thread sees a whole one or another.
	 */
	private final Logger[] recent = new Logger[RECENT];
	private final LongAdder otherRecords = new LongAdder();
	private volatile TraceryEvent other;

	/** The events of provider's loggers, each with these fields. */
	public LoggerEvents(String provider, Field... fields) {
		this.provider = provider;
		this.fields = fields.clone();
	}

	/**
	 * The event name of a logger: PROVIDER:LOGGER, where the characters libtracery does not take in a name (other
	 * than A-Z a-z 0-9 _ . $ -) become '_', a name that does not begin with a letter or '_' gets one '_' before
	 * it, and the name is cut at 200 characters. The root logger ("") is PROVIDER:root, an anonymous one (null)
	 * PROVIDER:anonymous.
	 */
	public String eventName(String loggerName) {
		if (loggerName == null)
			return provider + ":anonymous";
		if (loggerName.isEmpty())
			return provider + ":root";
		StringBuilder name = new StringBuilder(provider).append(':');
		int limit = name.length() + MAX_NAME;
		char first = loggerName.charAt(0);
		if (!(isAsciiLetter(first) || first == '_'))
			name.append('_');
		for (int i = 0; i < loggerName.length() && name.length() < limit; i++) {
			char c = loggerName.charAt(i);
			boolean allowed = isAsciiLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$' ||
					  c == '-';
			name.append(allowed ? c : '_');
		}
		return name.toString();
	}

	private static boolean isAsciiLetter(char c) {
		return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
	}

	/**
	 * The event of a logger's records (null: an anonymous logger): its own, defined by its first record, or,
	 * once MAX_LOGGERS loggers have one, PROVIDER:_other_loggers (that record then counted).
	 *
	 * @throws IllegalArgumentException libtracery refused the event (its reason in the message)
	 */
	public Logger of(String loggerName) {
		String key = loggerName == null ? ANONYMOUS_KEY : loggerName;
		int slot = key.hashCode() & (RECENT - 1);
		Logger logger = recent[slot];
		if (logger == null || logger.key != key) {
			logger = lookUp(key, loggerName);
			recent[slot] = logger;
		}
		if (!logger.own)
			otherRecords.increment();
		return logger;
	}

	private Logger lookUp(String key, String loggerName) {
		Logger logger = loggers.get(key);
		if (logger != null)
			return logger;
		if (owners.get() < MAX_LOGGERS) {
			logger = loggers.computeIfAbsent(key, k -> {
				if (owners.incrementAndGet() > MAX_LOGGERS) {
					owners.decrementAndGet();
					return null;
				}
				try {
					return new Logger(key, TraceryEvent.define(eventName(loggerName), fields), name(loggerName),
							  true);
				} catch (RuntimeException e) {
					owners.decrementAndGet();
					throw e;
				}
			});
			if (logger != null)
				return logger;
		}
		TraceryEvent event = other;
		if (event == null) {
			// Two threads may define it at once: the same name and fields give the same event.
			event = TraceryEvent.define(provider + ":" + OTHER_LOGGERS, fields);
			other = event;
		}
		return new Logger(key, event, name(loggerName), false);
	}

	private static Utf8String name(String loggerName) {
		return Utf8String.of(loggerName == null ? "" : loggerName);
	}

	/** The loggers with an event of their own (at most MAX_LOGGERS). */
	public int ownEvents() {
		return loggers.size();
	}

	/** Records of loggers beyond MAX_LOGGERS, handed to PROVIDER:_other_loggers (recorded or not). */
	public long otherLoggerRecords() {
		return otherRecords.sum();
	}
}
