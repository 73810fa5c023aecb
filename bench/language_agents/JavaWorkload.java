// bench/language-agents' Java workload: times java.util.logging records through one handler (Tracery's,
// LTTng-UST's JUL agent's, or one that does nothing: what JUL itself costs) and Tracery's typed events, in one
// JVM, and prints one line per operation, "op NAME ns_per_op X", the CPU time of the thread per operation
// (ThreadMXBean: the wall time of a loaded machine counts the other processes' turns too), then "emitted N",
// the records and typed events it emitted in all (warm-up included). The operations:
//   jul_record       logger.info(message): both agents' handlers ask for the source class and method, which
//                    JUL finds by walking the stack (LogRecord's caller inference)
//   jul_logp_record  logger.logp(level, class, method, message): the source given, no stack walk
//   typed_emit       if (ev.enabled()) ev.emit(id, path, ok, ms) (Tracery only)
//   is_loggable      logger.isLoggable(Level.INFO), JUL's own level check
// Each runs WARM_UP iterations (in batches of 1000), then RECORDS timed.
//
//     java -cp tracery.jar:java-workload.jar[:lttng-ust-agent-*.jar] JavaWorkload tracery|lttng|none RECORDS WARM_UP [recording]
//
// "recording" (Tracery): waits until a session records the typed event before anything is timed or emitted, so
// that the trace holds every record of the run.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.tracery.Field;
import org.tracery.TraceryEvent;
import org.tracery.jul.TraceryLogHandler;

public final class JavaWorkload {
	/** Held here: JUL holds its loggers weakly. */
	private static final Logger LOGGER = Logger.getLogger("bench.jul");
	private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
	/** Keeps the JIT from removing the loops whose results go nowhere else. */
	private static long sink;

	public static void main(String[] args) throws Exception {
		if (args.length < 3 || args.length > 4 || !List.of("tracery", "lttng", "none").contains(args[0]))
			throw new IllegalArgumentException("usage: JavaWorkload tracery|lttng|none RECORDS WARM_UP [recording]");
		int records = Integer.parseInt(args[1]);
		int warmUp = Integer.parseInt(args[2]);
		Handler handler;
		if (args[0].equals("tracery"))
			handler = new TraceryLogHandler();
		else if (args[0].equals("lttng"))
			// LTTng-UST's agent, loaded by name: no build dependency on it.
			handler = (Handler)Class.forName("org.lttng.ust.agent.jul.LttngLogHandler").getConstructor().newInstance();
		else
			handler = new Handler() {
				@Override
				public void publish(LogRecord record) {
				}

				@Override
				public void flush() {
				}

				@Override
				public void close() {
				}
			};
		LOGGER.setUseParentHandlers(false);
		LOGGER.addHandler(handler);
		LOGGER.setLevel(Level.INFO);
		TraceryEvent typed = args[0].equals("tracery")
					     ? TraceryEvent.define("jbench:request", Field.int64("id"), Field.string("path"),
								   Field.bool("ok"), Field.float64("ms"))
					     : null;

		if (typed != null && args.length == 4) {
			long deadline = System.nanoTime() + 10_000_000_000L;
			while (!typed.enabled()) {
				if (System.nanoTime() > deadline)
					throw new IllegalStateException("no session recorded jbench:request within 10 s");
				Thread.sleep(1);
			}
		}

		// Each operation is a loop in a method of its own, run in batches: after the warm-up batches the JIT has
		// compiled each loop whole, as a program's hot code would be.
		Batch julRecord = n -> {
			for (int i = 0; i < n; i++)
				LOGGER.info("request served");
		};
		Batch julLogp = n -> {
			for (int i = 0; i < n; i++)
				LOGGER.logp(Level.INFO, "bench.Server", "serve", "request served");
		};
		Batch typedEvent = n -> {
			for (int i = 0; i < n; i++)
				if (typed.enabled())
					typed.emit((long)i, "/index.html", true, 1.5);
		};
		Batch isLoggable = n -> {
			int loggable = 0;
			for (int i = 0; i < n; i++)
				if (LOGGER.isLoggable(Level.INFO))
					loggable++;
			sink += loggable;
		};
		long events = time("jul_record", julRecord, records, warmUp) + time("jul_logp_record", julLogp, records, warmUp);
		if (typed != null)
			events += time("typed_emit", typedEvent, records, warmUp);
		time("is_loggable", isLoggable, records, warmUp);
		System.out.println("emitted " + events);
		handler.close();
	}

	/** n iterations of one operation. */
	private interface Batch {
		void run(int n);
	}

	private static final int BATCH = 1000;

	/** Runs warmUp iterations of op, then `records` timed; prints the CPU time per iteration, returns the
	 *  iterations run. */
	private static long time(String name, Batch op, int records, int warmUp) {
		for (int done = 0; done < warmUp; done += BATCH)
			op.run(Math.min(BATCH, warmUp - done));
		long start = THREADS.getCurrentThreadCpuTime();
		for (int done = 0; done < records; done += BATCH)
			op.run(Math.min(BATCH, records - done));
		long elapsed = THREADS.getCurrentThreadCpuTime() - start;
		System.out.printf("op %s ns_per_op %.2f%n", name, (double)elapsed / records);
		return (long)warmUp + records;
	}
}
