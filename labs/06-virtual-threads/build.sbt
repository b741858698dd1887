// Lab 06: virtual threads. A Play 2.9 project of its own: `sbt run` works here, with or
// without a database (the JDBC endpoints then answer 503). It compiles on Java 17 and
// runs on any Java 17+; its virtual-thread endpoints need Java 21 or later at run time
// (app/work/VirtualThreads.java reaches that API reflectively).
name := "lab06-virtual-threads"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

// The instruments the lab driver reads (/pools, the timeline, a profile), built from
// labs/instruments as a part of this build (labs/sbt/build/Instruments.scala).
lazy val instruments = Instruments.project
lazy val root = (project in file(".")).enablePlugins(PlayJava).dependsOn(instruments % Instruments.Uses)

// Play's JDBC support (HikariCP connection pool) and the PostgreSQL driver, from Maven Central.
libraryDependencies ++= Seq(
  guice,
  javaJdbc,
  "org.postgresql" % "postgresql" % "42.7.4"
)

// Dev mode (`sbt run`) listens on loopback only, like the production server the lab driver starts.
PlayKeys.playDefaultAddress := "127.0.0.1"

javacOptions ++= Seq("-Xlint:unchecked", "-Xlint:deprecation", "-Werror")
scalacOptions ++= Seq("-deprecation", "-feature", "-Xfatal-warnings")

// The test classes each start a server: run them one after another.
Test / parallelExecution := false

// No API docs in the staged app: they only slow `sbt stage` down.
Compile / doc / sources := Seq.empty
Compile / packageDoc / publishArtifact := false

// PUL_PLAY=3: the same sources on Play 3 and Pekko, translated (labs/sbt/build/PlayLine.scala).
PlayLine.settings
