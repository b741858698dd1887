import sbt._
import sbt.Keys._
import play.sbt.PlayImport._
import play.sbt.PlayScala
import play.sbt.routes.RoutesKeys

/**
 * labs/instruments, the code that lets the lab driver see inside a server (its pools, their
 * timeline, a CPU profile), as a subproject of each lab's own build: in a lab's build.sbt,
 *
 *   lazy val instruments = Instruments.project
 *   lazy val root = (project in file(".")).enablePlugins(PlayJava).dependsOn(instruments % Instruments.Uses)
 *
 * Compiled from labs/instruments' sources into the lab's target/instruments, so two labs that
 * build at once never share a target folder, and nothing is published. On Play 3 its sources
 * are translated as the lab's are (PlayLine).
 */
object Instruments {
  /** The module beside the lab: labs/instruments (the build's base directory is the lab's). */
  def dir(buildBase: File): File = buildBase / ".." / "instruments"

  /** The lab's code uses the instruments; its tests use their test helpers (PoolsSchema, TimelineCheck). */
  val Uses = "compile->compile;test->test"

  lazy val project: Project = Project("instruments", file("target") / "instruments")
    .enablePlugins(PlayScala)
    .settings(
      name := "instruments",
      organization := "dev.playunderload",
      version := "1.0",
      scalaVersion := (LocalRootProject / scalaVersion).value,
      Compile / scalaSource := dir((ThisBuild / baseDirectory).value) / "app",
      Compile / javaSource := dir((ThisBuild / baseDirectory).value) / "app",
      Compile / resourceDirectory := dir((ThisBuild / baseDirectory).value) / "conf",
      Test / scalaSource := dir((ThisBuild / baseDirectory).value) / "test",
      Test / javaSource := dir((ThisBuild / baseDirectory).value) / "test",
      // Play's Java API (play.libs.Json) for the Java instruments; the schema validator for the
      // labs' Play tests. 1.0.83 is the newest release built on Jackson 2.14, the line Play 2.9
      // ships (2.14.3); later ones would pull Play's Jackson up to 2.15+.
      libraryDependencies += javaCore,
      libraryDependencies += "com.networknt" % "json-schema-validator" % "1.0.83" % Test,
      javacOptions ++= Seq("-Xlint:unchecked", "-Xlint:deprecation", "-Werror"),
      scalacOptions ++= Seq("-deprecation", "-feature", "-Xfatal-warnings"),
      // No reverse router: nothing links to these routes, and its `instruments.routes` class would
      // sit beside the router `instruments.Routes`, one file on a case-insensitive file system
      // (a macOS or Windows host's shared folder).
      RoutesKeys.generateReverseRouter := false,
      // The driver's /pools schema on the test classpath, where PoolsSchema finds it whichever
      // directory the tests run in.
      Test / resourceGenerators += Def.task {
        val schema = (Test / resourceManaged).value / "pools.schema.json"
        IO.copyFile(dir((ThisBuild / baseDirectory).value) / "pools.schema.json", schema)
        Seq(schema)
      }.taskValue,
      Compile / doc / sources := Seq.empty,
      Compile / packageDoc / publishArtifact := false
    )
    .settings(PlayLine.settings)
}
