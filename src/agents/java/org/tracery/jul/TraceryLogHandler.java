// A java.util.logging Handler that records each log record as an event named java:LOGGER.
package org.tracery.jul;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.ErrorManager;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.tracery.Field;
import org.tracery.TraceryEvent;

/**
 * Records java.util.logging records as Tracery events: one event per logger, {@code java:LOGGER} (see
 * {@link #eventName}), whose fields are
 *
 * <pre>
 * logger       string  the logger's name
 * level        int32   the level's value (SEVERE 1000, WARNING 900, INFO 800, CONFIG 700, FINE 500...)
 * level_name   string  the level's name
 * msg          string  the message: the handler's formatter's formatMessage (by default, the message with
 *                      its parameters), then the stack trace of the record's exception if it has one; cut
 *                      after 8000 characters with "... [N characters cut]"
 * class        string  the source class, "" if unknown
 * method       string  the source method, "" if unknown
 * thread_id    int64   the record's thread id
 * thread_name  string  that thread's name if it is the one publishing the record, else ""
 * time_ns      int64   the record's instant, in nanoseconds since the Unix epoch
 * </pre>
 *
 * so {@code tracery enable-event -u 'java:com.example.*' --filter 'level >= 900'} records the warnings and worse
 * of com.example's loggers. A record whose event no session records costs a map lookup and one read. The first
 * 1000 loggers of the process get an event each; the records of loggers beyond them are events
 * {@code java:_other_loggers}, whose logger field still names them (a process's events are never freed).
 */
public class TraceryLogHandler extends Handler {
	/** Loggers with an event of their own, in the whole process. */
	public static final int MAX_LOGGERS = 1000;
	/** The event of the records of the loggers beyond MAX_LOGGERS. */
	public static final String OTHER_LOGGERS = "java:_other_loggers";
	/** Characters of a message recorded. */
	public static final int MAX_MESSAGE = 8000;
	/** The longest event name libtracery takes after "java:" (TRACERY_EVENT_MAX_NAME). */
	private static final int MAX_NAME = 200;

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

	/** Logger name (null: anonymous) → its event, for the whole process; at most MAX_LOGGERS entries. */
	private static final ConcurrentHashMap<String, TraceryEvent> EVENTS = new ConcurrentHashMap<>();
	private static final String ANONYMOUS_KEY = "\0anonymous";

	private final LongAdder lost = new LongAdder();

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

	/** Records this handler did not record because libtracery refused them (reported to its ErrorManager). */
	public long lostRecords() {
		return lost.sum();
	}

	/** The event of a logger's records: its own, or java:_other_loggers beyond MAX_LOGGERS. */
	private static TraceryEvent eventOf(String loggerName) {
		String key = loggerName == null ? ANONYMOUS_KEY : loggerName;
		TraceryEvent event = EVENTS.get(key);
		if (event != null)
			return event;
		if (EVENTS.size() >= MAX_LOGGERS)
			return EVENTS.computeIfAbsent(OTHER_LOGGERS, k -> TraceryEvent.define(OTHER_LOGGERS, FIELDS));
		// Two threads may both pass the size check: the map may hold a few more than MAX_LOGGERS.
		return EVENTS.computeIfAbsent(key, k -> TraceryEvent.define(eventName(loggerName), FIELDS));
	}

	@Override
	public void publish(LogRecord record) {
		if (record == null)
			return;
		TraceryEvent event;
		try {
			event = eventOf(record.getLoggerName());
		} catch (IllegalArgumentException e) {
			fail("tracery: the records of logger " + record.getLoggerName() + " are not recorded", e,
			     ErrorManager.GENERIC_FAILURE);
			return;
		}
		if (!event.enabled() || !isLoggable(record))
			return;
		String msg;
		try {
			msg = message(record);
		} catch (RuntimeException e) {
			fail("tracery: a record's message could not be formatted", e, ErrorManager.FORMAT_FAILURE);
			return;
		}
		long threadId = record.getLongThreadID();
		Thread current = Thread.currentThread();
		String threadName = current.getId() == threadId ? current.getName() : "";
		Instant instant = record.getInstant();
		Level level = record.getLevel();
		try {
			event.emit(record.getLoggerName() == null ? "" : record.getLoggerName(), level.intValue(),
				   level.getName(), msg, orEmpty(record.getSourceClassName()),
				   orEmpty(record.getSourceMethodName()), threadId, threadName,
				   instant.getEpochSecond() * 1_000_000_000L + instant.getNano());
		} catch (IllegalArgumentException e) {
			fail("tracery: a record was not recorded", e, ErrorManager.WRITE_FAILURE);
		}
	}

	private String message(LogRecord record) {
		Formatter formatter = getFormatter();
		String msg = (formatter != null ? formatter : PLAIN).formatMessage(record);
		Throwable thrown = record.getThrown();
		if (thrown != null) {
			StringWriter trace = new StringWriter();
			thrown.printStackTrace(new PrintWriter(trace));
			msg = msg + "\n" + trace;
		}
		if (msg.length() > MAX_MESSAGE)
			msg = msg.substring(0, MAX_MESSAGE) + "... [" + (msg.length() - MAX_MESSAGE) + " characters cut]";
		return msg;
	}

	private void fail(String what, Exception e, int code) {
		lost.increment();
		reportError(what, e, code);
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
