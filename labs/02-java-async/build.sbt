// Lab 02: Java async pitfalls. A Play 2.9 Java project of its own: `sbt run` works here.
name := "lab02-java-async"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

// The instruments the lab driver reads (/pools, the timeline, a profile), built from
// labs/instruments as a part of this build (labs/sbt/build/Instruments.scala).
lazy val instruments = Instruments.project
lazy val root = (project in file(".")).enablePlugins(PlayJava).dependsOn(instruments % Instruments.Uses)

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

// PUL_PLAY=3: the same sources on Play 3 and Pekko, translated (labs/sbt/build/PlayLine.scala).
PlayLine.settings
