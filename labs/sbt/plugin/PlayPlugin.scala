import sbt._

/**
 * The sbt plugin of the Play line a lab builds on; PUL_PLAY chooses (build/PlayLine.scala refuses
 * values other than 2.9 and 3). Every lab's project/plugins.sbt adds it: `addSbtPlugin(PlayPlugin.module)`.
 * Each lab's project/project/build.sbt compiles this file into the build that reads
 * project/plugins.sbt, since a build's plugins are chosen before its own sources compile.
 */
object PlayPlugin {
  // Play 2.9.11 on Akka 2.6.21, the default: the line the book's design names.
  val Play29 = "com.typesafe.play" % "sbt-plugin" % "2.9.11"
  // Play 3.0.9 on Apache Pekko with PUL_PLAY=3: the newest Play 3 whose whole tree (what the labs
  // use) resolves on the registry the project is built against; 3.0.10 and 3.0.11 lack modules
  // there (README, "Play 3"). With full access to Maven Central, raise it here.
  val Play3 = "org.playframework" % "sbt-plugin" % "3.0.9"

  val module: ModuleID = sys.env.get("PUL_PLAY").filter(_.nonEmpty) match {
    case Some("3") => Play3
    case _         => Play29
  }
}
