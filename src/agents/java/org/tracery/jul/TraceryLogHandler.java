// A java.util.logging Handler that records each log record as an event named java:LOGGER.
package org.tracery.jul;

import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.ErrorManager;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import org.tracery.Field;
import org.tracery.TraceryEvent;

/**
 * Records java.util.logging records as Tracery events: one event per logger, {@code java:LOGGER} (the root
 * logger {@code java:root}, an anonymous one {@code java:anonymous}), whose fields are
 *
 * <pre>
 * logger       string  the logger's name
 * level        int32   the level's value (SEVERE 1000, WARNING 900, INFO 800, CONFIG 700, FINE 500...)
 * level_name   string  the level's name
 * msg          string  the message, formatted with its parameters (Formatter.formatMessage)
 * class        string  the source class, "" if unknown
 * method       string  the source method, "" if unknown
 * thread_id    int64   the record's thread id
 * thread_name  string  that thread's name if it is the one publishing the record, else ""
 * time_ns      int64   the record's instant, in nanoseconds since the Unix epoch
 * </pre>
 *
 * so {@code tracery enable-event -u 'java:com.example.*' --filter 'level >= 900'} records the warnings and worse
 * of com.example's loggers. A record whose event no session records costs a map lookup and one read.
 */
public class TraceryLogHandler extends Handler {
	private static final Field[] FIELDS = {
		Field.string("logger"), Field.int32("level"),	   Field.string("level_name"),
		Field.string("msg"),	Field.string("class"),	   Field.string("method"),
		Field.int64("thread_id"), Field.string("thread_name"), Field.int64("time_ns"),
	};

	/** Formats the message alone (formatMessage) when no formatter is set. */
	private static final Formatter PLAIN = new Formatter() {
		@Override
		public String format(LogRecord record) {
			return formatMessage(record);
		}
	};

	/** A logger whose name libtracery refused: its records are counted, not recorded. */
	private static final Object REFUSED = new Object();

	/** Logger name → its TraceryEvent, or REFUSED. */
	private final ConcurrentHashMap<String, Object> events = new ConcurrentHashMap<>();
	private final LongAdder lost = new LongAdder();

	/** The longest event name libtracery takes after "java:" (TRACERY_EVENT_MAX_NAME). */
	private static final int MAX_NAME = 200;

	/**
	 * The event name of a logger: java:LOGGER, where the characters libtracery does not take in a name (other
	 * than A-Z a-z 0-9 _ . $ -) become '_', a name that does not begin with a letter or '_' gets one '_' before
	 * it, and the name is cut at 200 characters. The root logger is java:root, an anonymous one java:anonymous.
	 */
	public static String eventName(String loggerName) {
		if (loggerName == null)
			return "java:anonymous";
		if (loggerName.isEmpty())
			return "java:root";
		StringBuilder name = new StringBuilder("java:");
		char first = loggerName.charAt(0);
		if (!(isAsciiLetter(first) || first == '_'))
			name.append('_');
		for (int i = 0; i < loggerName.length() && name.length() < 5 + MAX_NAME; i++) {
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

	/** Records not recorded: their logger's event was refused, or their message was too large or unformattable. */
	public long lostRecords() {
		return lost.sum();
	}

	private Object eventOf(String loggerName) {
		String key = loggerName == null ? "\0anonymous" : loggerName;
		Object event = events.get(key);
		if (event != null)
			return event;
		return events.computeIfAbsent(key, k -> {
			try {
				return TraceryEvent.define(eventName(loggerName), FIELDS);
			} catch (IllegalArgumentException e) {
				reportError("tracery: the records of logger " + loggerName + " are not recorded", e,
					    ErrorManager.GENERIC_FAILURE);
				return REFUSED;
			}
		});
	}

	@Override
	public void publish(LogRecord record) {
		if (record == null)
			return;
		Object event = eventOf(record.getLoggerName());
		if (event == REFUSED) {
			lost.increment();
			return;
		}
		if (!((TraceryEvent)event).enabled() || !isLoggable(record))
			return;
		Formatter formatter = getFormatter();
		String msg;
		try {
			msg = (formatter != null ? formatter : PLAIN).formatMessage(record);
		} catch (RuntimeException e) {
			lost.increment();
			reportError("tracery: a record's message could not be formatted", e, ErrorManager.FORMAT_FAILURE);
			return;
		}
		long threadId = record.getLongThreadID();
		Thread current = Thread.currentThread();
		String threadName = current.getId() == threadId ? current.getName() : "";
		Instant instant = record.getInstant();
		try {
			((TraceryEvent)event)
				.emit(record.getLoggerName() == null ? "" : record.getLoggerName(), record.getLevel().intValue(),
			      record.getLevel().getName(), msg, orEmpty(record.getSourceClassName()),
			      orEmpty(record.getSourceMethodName()), threadId, threadName,
			      instant.getEpochSecond() * 1_000_000_000L + instant.getNano());
		} catch (IllegalArgumentException e) {
			lost.increment();
			reportError("tracery: a record was not recorded", e, ErrorManager.WRITE_FAILURE);
		}
	}

	private static String orEmpty(String s) {
		return s == null ? "" : s;
	}

	/** Nothing to flush: events go to libtracery's buffers as they are published. */
	@Override
	public void flush() {
	}

	@Override
	public void close() {
	}
}
