// java_agent_test's log4j 2 part, run by JavaAgentProgram in the same JVM where tracery.jar has its log4j 2
// appender: log events through org.tracery.log4j2.TraceryAppender, named by the configuration file
// (log4j2-test.xml) for com.example.l4j and its child, and added in code for com.example.prog. Prints the source
// lines, thread and counts the test checks the trace against.
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.tracery.log4j2.TraceryAppender;

public final class Log4j2Records {
	private Log4j2Records() {
	}

	/** The line that calls this. */
	private static int line() {
		return new Throwable().getStackTrace()[1].getLineNumber();
	}

	public static void run() throws InterruptedException {
		Logger configured = LogManager.getLogger("com.example.l4j");
		Logger noLocation = LogManager.getLogger("com.example.l4j.noloc");
		Logger inCode = LogManager.getLogger("com.example.prog");
		TraceryAppender appender = TraceryAppender.create("in-code", null);
		var core = (org.apache.logging.log4j.core.Logger)inCode;
		core.addAppender(appender);
		core.setAdditive(false);
		core.setLevel(Level.ALL);

		int warnLine = line() + 1;
		configured.warn("disk {} at {}%", "sda", 93);
		configured.info("below the filter");
		int errorLine = line() + 1;
		configured.error("failed", new IllegalStateException("boom"));
		int customLine = line() + 1;
		configured.log(Level.forName("NOTICE", 250), "between error and warn");
		noLocation.error("no location");
		int inCodeLine = line() + 1;
		inCode.fatal("from code");
		Thread worker = new Thread(() -> configured.fatal("from the worker"), "l4j-worker");
		worker.start();
		worker.join();
		System.out.println("l4j_lines " + warnLine + " " + errorLine + " " + customLine + " " + inCodeLine);
		System.out.println("l4j_thread " + Thread.currentThread().getId() + " " + worker.getId());
		System.out.println("l4j_lost " + appender.lostRecords());
	}
}
