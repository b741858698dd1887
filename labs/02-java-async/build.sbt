// Lab 02: Java async pitfalls. A standalone Play 2.9 Java project: `sbt run` works here.
name := "lab02-java-async"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

lazy val root = (project in file(".")).enablePlugins(PlayJava)

// ws: Play WS, for the variant that waits on a downstream service without holding a thread.
libraryDependencies ++= Seq(guice, ws)

// Dev mode (`sbt run`) listens on loopback only, like the production server the lab driver starts.
PlayKeys.playDefaultAddress := "127.0.0.1"

javacOptions ++= Seq("-Xlint:unchecked", "-Xlint:deprecation", "-Werror")

// No API docs in the staged app: they only slow `sbt stage` down.
Compile / doc / sources := Seq.empty
Compile / packageDoc / publishArtifact := false

// Tests run inside sbt's own JVM, the way `sbt run` runs the app in dev mode:
// the application then has a class loader of its own, which is what the
// class-loader test (AsyncActionsTest) needs to see. Play forks them by default.
Test / fork := false
