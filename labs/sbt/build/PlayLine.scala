import sbt._
import sbt.Keys._

/**
 * Which Play line a lab builds on: Play 2.9 on Akka (the default), or Play 3 on Apache Pekko
 * when PUL_PLAY=3 (labs/sbt/plugin/PlayPlugin.scala picks the sbt plugin from the same variable).
 *
 * The sources are written once, against Akka. For Play 3 the build compiles a translation of
 * them instead: every source and .conf file rewritten with labs/sbt/pekko-renames.txt, a list of
 * literal replacements (akka.actor.default-dispatcher -> pekko.actor.default-dispatcher, ...).
 * The book's Play 3 listings and its appendix come from the same list. A lab and the
 * instruments module (Instruments.scala) are translated alike.
 */
object PlayLine {
  val Variable = "PUL_PLAY"

  /** "2.9" or "3"; anything else stops the build with a clear message. */
  val name: String = sys.env.get(Variable).filter(_.nonEmpty).getOrElse("2.9") match {
    case line @ ("2.9" | "3") => line
    case other                => sys.error(s"$Variable=$other: use 2.9 (Play 2.9 on Akka, the default) or 3 (Play 3 on Pekko)")
  }
  val isPlay3: Boolean = name == "3"

  /** The (old, new) pairs of a renames file, in order: `old -> new` lines; # starts a comment. */
  def renames(file: File): Seq[(String, String)] =
    IO.readLines(file).map(_.trim).filterNot(line => line.isEmpty || line.startsWith("#")).map { line =>
      line.split(" -> ", -1) match {
        case Array(from, to) if from.nonEmpty => (from, to)
        case _                                => sys.error(s"$file: not `old -> new`: $line")
      }
    }

  /** The renames every build reads: labs/sbt, beside the lab (the build's base directory). */
  def renamesFile(buildBase: File): File = buildBase / ".." / "sbt" / "pekko-renames.txt"

  def translate(text: String, pairs: Seq[(String, String)]): String =
    pairs.foldLeft(text) { case (done, (from, to)) => done.replace(from, to) }

  /** Each file under `dirs` that `select` accepts, translated into `into` at the same relative path. */
  private def translateTree(dirs: Seq[File], select: FileFilter, into: File, pairs: Seq[(String, String)]): Seq[File] = {
    val written = for {
      dir          <- dirs.filter(_.isDirectory)
      (file, path) <- (dir ** select).get.filter(_.isFile).pair(Path.relativeTo(dir))
    } yield {
      val out        = into / path
      val translated = translate(IO.read(file), pairs)
      // Unchanged files keep their time stamps, so a rebuild recompiles only what changed.
      if (!out.exists || IO.read(out) != translated) IO.write(out, translated)
      out
    }
    // A source deleted or renamed must not linger in its old translation.
    IO.delete((into ** select).get.filter(_.isFile).toSet -- written)
    written
  }

  private val Sources: FileFilter   = "*.java" || "*.scala"
  private val Settings: FileFilter  = "*.conf"

  private def translatedSources(config: Configuration) = Seq(
    config / unmanagedSources := Nil,
    config / sourceGenerators += Def.task {
      val pairs = renames(renamesFile((ThisBuild / baseDirectory).value))
      val into  = (config / sourceManaged).value / "pekko"
      translateTree((config / unmanagedSourceDirectories).value, Sources, into, pairs)
    }.taskValue,
    config / unmanagedResources := (config / unmanagedResources).value.filterNot(Settings.accept),
    config / resourceGenerators += Def.task {
      val pairs = renames(renamesFile((ThisBuild / baseDirectory).value))
      // At the top of resourceManaged: a resource's place on the classpath is its path below it.
      translateTree((config / unmanagedResourceDirectories).value, Settings, (config / resourceManaged).value, pairs)
    }.taskValue
  )

  /** Play 3: its own target folder (so the two lines never share compiled classes), the translated sources. */
  val settings: Seq[Setting[_]] =
    if (!isPlay3) Nil
    else
      Seq(
        target := baseDirectory.value / "target" / "play-3",
        // Play 3.0.9's play-java-forms is not on the registry the labs build against, and no lab
        // uses forms. PlayJava adds it to every Java project, and Play's Java API (play-java, with
        // its Guice bindings) comes through it: depend on play-java itself instead.
        libraryDependencies ~= (_.map(module => if (module.name == "play-java-forms") module.withName("play-java") else module))
      ) ++ translatedSources(Compile) ++ translatedSources(Test)
}
