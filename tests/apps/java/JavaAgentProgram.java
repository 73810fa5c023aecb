// java_agent_test's traced program: typed events, java.util.logging records and, with the argument log4j2, log4j 2
// log events (Log4j2Records, built where tracery.jar has its log4j 2 appender) through tracery.jar, printing what
// the test checks the trace against. Prints "ready PID", waits for "go" on stdin (the session has started), then
// emits and prints "done". With the argument bound: the records of 1002 loggers, beyond the handler's bound.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.tracery.Field;
import org.tracery.TraceryEvent;
import org.tracery.Utf8String;
import org.tracery.jul.TraceryLogHandler;

public final class JavaAgentProgram {
	/** Kept here: JUL holds its loggers weakly. */
	private static final Logger APP = Logger.getLogger("com.example.app");
	private static final Logger OTHER = Logger.getLogger("org.other");
	private static final Logger ACCENTED = Logger.getLogger("com.example.\u00fcn\u00ef");

	public static void main(String[] args) throws Exception {
		if (args.length > 0 && args[0].equals("bound")) {
			loggerBound();
			return;
		}
		TraceryEvent request = TraceryEvent.define("jtest:request", Field.int64("id"), Field.string("path"),
							   Field.bool("ok"), Field.float64("ms"), Field.int32("code"),
							   Field.int16("mid"), Field.int8("small"));
		TraceryEvent never = TraceryEvent.define("jother:never", Field.int32("x"));
		refusal(() -> TraceryEvent.define("bad provider:x", Field.int32("x")));
		refusal(() -> TraceryEvent.define("jtest:request", Field.int32("id")));
		refusal(() -> request.emit(1L, "/", true, 1.0, 1, 1, 300));
		refusal(() -> request.emit(1L));
		refusal(() -> request.writer().string("/"));
		refusal(() -> request.writer().integer(1).emit());
		refusal(() -> {
			TraceryEvent.Writer interrupted = request.writer().integer(1);
			never.writer().integer(2).emit(); // another event written on the thread meanwhile
			interrupted.string("/");
		});

		TraceryLogHandler handler = new TraceryLogHandler();
		for (Logger logger : new Logger[] {APP, OTHER, ACCENTED}) {
			logger.setUseParentHandlers(false);
			logger.addHandler(handler);
			logger.setLevel(Level.ALL);
		}

		System.out.println("ready " + ProcessHandle.current().pid());
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		if (!"go".equals(in.readLine()))
			throw new IllegalStateException("expected go");

		System.out.println("enabled " + request.enabled() + " " + never.enabled());
		request.emit(42L, "/index.html", true, 1.5, -7, (short)-300, (byte)-128);
		request.emit(Long.MIN_VALUE, "h\u00e9llo \u2713 \ud834\udd1e lone\ud800", false, -0.25, Integer.MAX_VALUE,
			     Short.MAX_VALUE, Byte.MAX_VALUE);
		request.emit(Long.MAX_VALUE, "", true, 1e300, 0, 0, 0);
		request.writer().integer(7).string(Utf8String.of("/w\u00e9")).bool(true).float64(2.5).integer(-1).integer(-2)
			.integer(-3).emit();
		never.emit(1);

		APP.log(Level.WARNING, "disk {0} at {1}%", new Object[] {"sda", 93});
		APP.info("below the filter");
		APP.severe("plain severe");
		Thread worker = new Thread(() -> APP.logp(Level.SEVERE, "com.example.Worker", "run", "from the worker"),
					   "worker-1");
		worker.start();
		worker.join();
		OTHER.severe("not enabled");
		APP.log(Level.SEVERE, "failed", new IllegalStateException("boom"));
		APP.warning("x".repeat(9000));
		ACCENTED.warning("accented");

		// Defined after the session started: its pattern enables it at once.
		TraceryEvent late = TraceryEvent.define("jtest:late", Field.string("what"), Field.int64("n"));
		System.out.println("late " + late.enabled());
		late.emit("after start", 7L);
		// Four threads at once, each its own sequence.
		TraceryEvent burst = TraceryEvent.define("jtest:burst", Field.int32("thread"), Field.int32("i"),
							 Field.string("s"));
		Thread[] threads = new Thread[4];
		for (int t = 0; t < threads.length; t++) {
			int thread = t;
			threads[t] = new Thread(() -> {
				for (int i = 0; i < 1000; i++)
					burst.emit(thread, i, "t" + thread + "-" + i);
			});
			threads[t].start();
		}
		for (Thread thread : threads)
			thread.join();
		// log4j 2, where tracery.jar has its appender and the test put log4j on the class path (by name: this
		// class builds without log4j).
		if (args.length > 0 && args[0].equals("log4j2"))
			Class.forName("Log4j2Records").getMethod("run").invoke(null);
		System.out.println("lost " + handler.lostRecords());
		System.out.println("thread " + Thread.currentThread().getId() + " " + worker.getId());
		System.out.println("done");
	}

	/**
	 * The bound on loggers with an event of their own, in a process of its own: cap.l0 ... cap.l999 get one,
	 * cap.l1000 and cap.l1001 (twice) are java:_other_loggers. Prints the records counted.
	 */
	private static void loggerBound() {
		Logger parent = Logger.getLogger("cap");
		parent.setUseParentHandlers(false);
		parent.addHandler(new TraceryLogHandler());
		for (int i = 0; i < TraceryLogHandler.MAX_LOGGERS + 2; i++)
			Logger.getLogger("cap.l" + i).warning("capped " + i);
		Logger.getLogger("cap.l1001").warning("capped again");
		System.out.println("other_loggers " + TraceryLogHandler.otherLoggerRecords());
	}

	private static void refusal(Runnable r) {
		try {
			r.run();
			System.out.println("accepted");
		} catch (IllegalArgumentException | IllegalStateException e) {
			System.out.println("refused " + e.getMessage());
		}
	}
}
