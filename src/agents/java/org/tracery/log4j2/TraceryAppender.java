// A log4j 2 Appender (the plugin "Tracery") that records each log event as an event named log4j2:LOGGER.
package org.tracery.log4j2;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.atomic.LongAdder;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.Core;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.appender.AppenderLoggingException;
import org.apache.logging.log4j.core.config.Property;
import org.apache.logging.log4j.core.config.plugins.Plugin;
import org.apache.logging.log4j.core.config.plugins.PluginAttribute;
import org.apache.logging.log4j.core.config.plugins.PluginElement;
import org.apache.logging.log4j.core.config.plugins.PluginFactory;
import org.apache.logging.log4j.core.time.Instant;
import org.apache.logging.log4j.message.Message;
import org.tracery.Field;
import org.tracery.LoggerEvents;
import org.tracery.TraceryEvent;
import org.tracery.Utf8String;

/**
 * Records log4j 2 log events as Tracery events: one event per logger, {@code log4j2:LOGGER} (see
 * {@link #eventName}), whose fields are
 *
 * <pre>
 * logger       string  the logger's name
 * level        int32   the level on log4j 1's scale, as LTTng's log4j agent records it: FATAL 50000, ERROR 40000,
 *                      WARN 30000, INFO 20000, DEBUG 10000, TRACE 5000 (OFF 2^31 - 1, ALL -2^31)
 * level_name   string  the level's name
 * msg          string  the formatted message, then the stack trace of the event's exception if it has one; cut
 *                      after 8000 characters with "... [N characters cut]"
 * class        string  the source class, "" when the logger's location is off (includeLocation="false")
 * method       string  the source method, "" likewise
 * file         string  the source file, "" likewise or when unknown
 * line         int32   the source line, -1 likewise or when unknown
 * thread_id    int64   the id of the thread that logged
 * thread_name  string  its name
 * time_ns      int64   the event's instant, in nanoseconds since the Unix epoch
 * </pre>
 *
 * so {@code tracery enable-event -u 'log4j2:com.example.*' --filter 'level >= 30000'} records the warnings and
 * worse of com.example's loggers. In a configuration file:
 *
 * <pre>
 * &lt;Appenders&gt;&lt;Tracery name="tracery"/&gt;&lt;/Appenders&gt;
 * &lt;Loggers&gt;&lt;Root level="info"&gt;&lt;AppenderRef ref="tracery"/&gt;&lt;/Root&gt;&lt;/Loggers&gt;
 * </pre>
 *
 * or in code, {@link #create}. A log event whose event no session records costs a look in a small cache and
 * one read. The first 1000 loggers of the process get an event each; the log events of loggers beyond them
 * are events {@code log4j2:_other_loggers}, whose logger field still names them, counted by
 * {@link #otherLoggerRecords}.
 */
@Plugin(name = TraceryAppender.PLUGIN_NAME, category = Core.CATEGORY_NAME, elementType = Appender.ELEMENT_TYPE,
	printObject = true)
public final class TraceryAppender extends AbstractAppender {
	/** The appender's element in a configuration file. */
	public static final String PLUGIN_NAME = "Tracery";
	/** Loggers with an event of their own, in the whole process. */
	public static final int MAX_LOGGERS = LoggerEvents.MAX_LOGGERS;
	/** The event of the log events of the loggers beyond MAX_LOGGERS. */
	public static final String OTHER_LOGGERS = "log4j2:" + LoggerEvents.OTHER_LOGGERS;
	/** Characters of a message recorded. */
	public static final int MAX_MESSAGE = 8000;

	private static final LoggerEvents EVENTS = new LoggerEvents(
		"log4j2", Field.string("logger"), Field.int32("level"), Field.string("level_name"), Field.string("msg"),
		Field.string("class"), Field.string("method"), Field.string("file"), Field.int32("line"),
		Field.int64("thread_id"), Field.string("thread_name"), Field.int64("time_ns"));

	/** log4j 2's levels, whose names are encoded once. */
	private static final Level[] LEVELS = {
		Level.FATAL, Level.ERROR, Level.WARN, Level.INFO, Level.DEBUG, Level.TRACE, Level.ALL, Level.OFF};
	private static final Utf8String[] LEVEL_NAMES = new Utf8String[LEVELS.length];
	static {
		for (int i = 0; i < LEVELS.length; i++)
			LEVEL_NAMES[i] = Utf8String.of(LEVELS[i].name());
	}

	private final LongAdder lost = new LongAdder();

	private TraceryAppender(String name, Filter filter, boolean ignoreExceptions) {
		super(name, filter, null, ignoreExceptions, Property.EMPTY_ARRAY);
	}

	/**
	 * The appender of a configuration file's {@code <Tracery name="..." ignoreExceptions="true|false">}, with an
	 * optional filter element. ignoreExceptions (the default: true) reports a log event that could not be
	 * recorded to log4j's status logger; false throws AppenderLoggingException to the caller.
	 */
	@PluginFactory
	public static TraceryAppender createAppender(@PluginAttribute("name") String name,
						     @PluginAttribute(value = "ignoreExceptions", defaultBoolean = true)
						     boolean ignoreExceptions,
						     @PluginElement("Filter") Filter filter) {
		if (name == null) {
			LOGGER.error("no name given for the appender " + PLUGIN_NAME);
			return null;
		}
		return new TraceryAppender(name, filter, ignoreExceptions);
	}

	/**
	 * An appender named name, with a filter or null, started: add it to a configuration
	 * ({@code config.addAppender}, {@code loggerConfig.addAppender}), or to a core Logger.
	 */
	public static TraceryAppender create(String name, Filter filter) {
		if (name == null)
			throw new NullPointerException("appender name");
		TraceryAppender appender = new TraceryAppender(name, filter, true);
		appender.start();
		return appender;
	}

	/** The event name of a logger: log4j2:LOGGER, mapped as {@link org.tracery.jul.TraceryLogHandler#eventName}. */
	public static String eventName(String loggerName) {
		return EVENTS.eventName(loggerName);
	}

	/**
	 * A log4j 2 level's value on log4j 1's scale, where a greater value is more severe: the standard levels as
	 * LTTng's log4j agent maps them (FATAL 100 → 50000 ... DEBUG 500 → 10000, TRACE 600 → 5000, OFF → 2^31 - 1,
	 * ALL → -2^31); a custom level between two standard ones falls between their values (60000 - 100 *
	 * intLevel up to 500, then 10000 - 50 * (intLevel - 500)), where LTTng keeps its intLevel as it is.
	 */
	public static int log4j1Level(int intLevel) {
		if (intLevel <= 0)
			return Integer.MAX_VALUE;
		if (intLevel == Integer.MAX_VALUE)
			return Integer.MIN_VALUE;
		if (intLevel <= 500)
			return 60000 - 100 * intLevel;
		return (int)Math.max(10000L - 50L * (intLevel - 500), Integer.MIN_VALUE + 1L);
	}

	/** Log events this appender did not record: their message failed to format, or libtracery refused them. */
	public long lostRecords() {
		return lost.sum();
	}

	/** Log events of loggers beyond the first MAX_LOGGERS, handed to log4j2:_other_loggers, by every appender. */
	public static long otherLoggerRecords() {
		return EVENTS.otherLoggerRecords();
	}

	@Override
	public void append(LogEvent logEvent) {
		LoggerEvents.Logger logger;
		try {
			logger = EVENTS.of(logEvent.getLoggerName());
		} catch (IllegalArgumentException e) {
			fail("tracery: the log events of logger " + logEvent.getLoggerName() + " are not recorded", logEvent, e);
			return;
		}
		TraceryEvent event = logger.event;
		if (!event.enabled())
			return;
		// Everything that may run the program's code (the message's parameters, the exception's) runs before the
		// thread's writer begins, which no other event may interrupt.
		String msg;
		try {
			msg = message(logEvent);
		} catch (RuntimeException e) {
			fail("tracery: a log event's message could not be formatted", logEvent, e);
			return;
		}
		Level level = logEvent.getLevel();
		Utf8String levelName = levelName(level);
		StackTraceElement source = logEvent.getSource(); // null when the logger's location is off
		String sourceClass = "", sourceMethod = "", file = "";
		int line = -1;
		if (source != null) {
			sourceClass = source.getClassName();
			sourceMethod = source.getMethodName();
			file = source.getFileName() == null ? "" : source.getFileName();
			line = source.getLineNumber() < 0 ? -1 : source.getLineNumber();
		}
		long threadId = logEvent.getThreadId();
		String threadName = logEvent.getThreadName();
		Instant instant = logEvent.getInstant();
		try {
			TraceryEvent.Writer w = event.writer()
							.string(logger.name)
							.integer(log4j1Level(level.intLevel()))
							.string(levelName)
							.string(msg)
							.recurringString(sourceClass)
							.recurringString(sourceMethod)
							.recurringString(file)
							.integer(line)
							.integer(threadId);
			if (threadName != null && threadName == Thread.currentThread().getName())
				w.threadName();
			else
				w.string(threadName == null ? "" : threadName);
			w.integer(instant.getEpochSecond() * 1_000_000_000L + instant.getNanoOfSecond()).emit();
		} catch (IllegalArgumentException e) {
			fail("tracery: a log event was not recorded", logEvent, e);
		}
	}

	private static Utf8String levelName(Level level) {
		for (int i = 0; i < LEVELS.length; i++)
			if (LEVELS[i] == level)
				return LEVEL_NAMES[i];
		return Utf8String.of(level.name());
	}

	private static String message(LogEvent logEvent) {
		Message message = logEvent.getMessage();
		String msg = message == null ? "" : message.getFormattedMessage();
		if (msg == null)
			msg = "null";
		Throwable thrown = logEvent.getThrown();
		if (thrown != null) {
			StringWriter trace = new StringWriter();
			thrown.printStackTrace(new PrintWriter(trace));
			msg = msg + "\n" + trace;
		}
		if (msg.length() > MAX_MESSAGE)
			msg = msg.substring(0, MAX_MESSAGE) + "... [" + (msg.length() - MAX_MESSAGE) + " characters cut]";
		return msg;
	}

	private void fail(String what, LogEvent logEvent, RuntimeException e) {
		lost.increment();
		if (!ignoreExceptions())
			throw new AppenderLoggingException(what, e);
		error(what, logEvent, e);
	}
}
