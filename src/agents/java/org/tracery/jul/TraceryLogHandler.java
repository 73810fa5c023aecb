// A java.util.logging Handler that records each log record as an event named java:LOGGER.
package org.tracery.jul;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.ErrorManager;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.tracery.Field;
import org.tracery.LoggerEvents;
import org.tracery.TraceryEvent;
import org.tracery.Utf8String;

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
 * of com.example's loggers. A record whose event no session records costs a look in a small cache and one read.
 * The first 1000 loggers of the process get an event each; the records of loggers beyond them are events
 * {@code java:_other_loggers}, whose logger field still names them, counted by {@link #otherLoggerRecords}
 * (a process's events are never freed).
 */
public class TraceryLogHandler extends Handler {
	/** Loggers with an event of their own, in the whole process. */
	public static final int MAX_LOGGERS = LoggerEvents.MAX_LOGGERS;
	/** The event of the records of the loggers beyond MAX_LOGGERS. */
	public static final String OTHER_LOGGERS = "java:" + LoggerEvents.OTHER_LOGGERS;
	/** Characters of a message recorded. */
	public static final int MAX_MESSAGE = 8000;

	private static final LoggerEvents EVENTS = new LoggerEvents(
		"java", Field.string("logger"), Field.int32("level"), Field.string("level_name"), Field.string("msg"),
		Field.string("class"), Field.string("method"), Field.int64("thread_id"), Field.string("thread_name"),
		Field.int64("time_ns"));

	/** JUL's levels, whose names are encoded once. */
	private static final Level[] LEVELS = {
		Level.SEVERE, Level.WARNING, Level.INFO, Level.CONFIG, Level.FINE, Level.FINER, Level.FINEST, Level.ALL,
		Level.OFF};
	private static final Utf8String[] LEVEL_NAMES = new Utf8String[LEVELS.length];
	static {
		for (int i = 0; i < LEVELS.length; i++)
			LEVEL_NAMES[i] = Utf8String.of(LEVELS[i].getName());
	}

	private final LongAdder lost = new LongAdder();

	/**
	 * The event name of a logger: java:LOGGER, where the characters libtracery does not take in a name (other
	 * than A-Z a-z 0-9 _ . $ -) become '_', a name that does not begin with a letter or '_' gets one '_' before
	 * it, and the name is cut at 200 characters. The root logger is java:root, an anonymous one java:anonymous.
	 */
	public static String eventName(String loggerName) {
		return EVENTS.eventName(loggerName);
	}

	/**
	 * Records this handler did not record: their message failed to format, or libtracery refused them (each
	 * reported to its ErrorManager).
	 */
	public long lostRecords() {
		return lost.sum();
	}

	/** Records of loggers beyond the first MAX_LOGGERS, handed to java:_other_loggers, by every handler. */
	public static long otherLoggerRecords() {
		return EVENTS.otherLoggerRecords();
	}

	@Override
	public void publish(LogRecord record) {
		if (record == null)
			return;
		LoggerEvents.Logger logger;
		try {
			logger = EVENTS.of(record.getLoggerName());
		} catch (IllegalArgumentException e) {
			fail("tracery: the records of logger " + record.getLoggerName() + " are not recorded", e,
			     ErrorManager.GENERIC_FAILURE);
			return;
		}
		TraceryEvent event = logger.event;
		if (!event.enabled() || !isLoggable(record))
			return;
		// Everything that may run the program's code (the message's parameters, a Level's getName) runs before
		// the thread's writer begins, which no other event may interrupt.
		String msg;
		try {
			msg = message(record);
		} catch (RuntimeException e) {
			fail("tracery: a record's message could not be formatted", e, ErrorManager.FORMAT_FAILURE);
			return;
		}
		Level level = record.getLevel();
		Utf8String levelName = levelName(level);
		String sourceClass = orEmpty(record.getSourceClassName());
		String sourceMethod = orEmpty(record.getSourceMethodName());
		long threadId = record.getLongThreadID();
		Instant instant = record.getInstant();
		try {
			TraceryEvent.Writer w = event.writer()
							.string(logger.name)
							.integer(level.intValue())
							.string(levelName)
							.string(msg)
							.recurringString(sourceClass)
							.recurringString(sourceMethod)
							.integer(threadId);
			if (Thread.currentThread().getId() == threadId)
				w.threadName();
			else
				w.string("");
			w.integer(instant.getEpochSecond() * 1_000_000_000L + instant.getNano()).emit();
		} catch (IllegalArgumentException e) {
			fail("tracery: a record was not recorded", e, ErrorManager.WRITE_FAILURE);
		}
	}

	private static Utf8String levelName(Level level) {
		for (int i = 0; i < LEVELS.length; i++)
			if (LEVELS[i] == level)
				return LEVEL_NAMES[i];
		return Utf8String.of(level.getName());
	}

	private String message(LogRecord record) {
		Formatter formatter = getFormatter();
		String msg;
		Object[] parameters = record.getParameters();
		if (formatter == null && record.getResourceBundle() == null && (parameters == null || parameters.length == 0))
			msg = record.getMessage(); // what Formatter.formatMessage gives, without its work
		else
			msg = (formatter != null ? formatter : PLAIN).formatMessage(record);
		Throwable thrown = record.getThrown();
		if (thrown != null) {
			StringWriter trace = new StringWriter();
			thrown.printStackTrace(new PrintWriter(trace));
			msg = msg + "\n" + trace;
		}
		if (msg != null && msg.length() > MAX_MESSAGE)
			msg = msg.substring(0, MAX_MESSAGE) + "... [" + (msg.length() - MAX_MESSAGE) + " characters cut]";
		return msg;
	}

	/** Formats the message alone (formatMessage) when no formatter is set. */
	private static final Formatter PLAIN = new Formatter() {
		@Override
		public String format(LogRecord record) {
			return formatMessage(record);
		}
	};

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
