// Lab 02: Java async pitfalls. A standalone Play 2.9 Java project: `sbt run` works here.
name := "lab02-java-async"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

lazy val root = (project in file(".")).enablePlugins(PlayJava)

// ws: Play WS, for the variant that waits on a downstream service without holding a thread.
libraryDependencies ++= Seq(guice, ws)

// Test only: the Play tests check the live /pools answer against the driver's contract,
// ../common/pools.schema.json (labs/common/README.md). 1.0.83 is the newest release built on
// Jackson 2.14, the line Play 2.9 ships (2.14.3); later ones would pull Play's Jackson up to 2.15+.
libraryDependencies += "com.networknt" % "json-schema-validator" % "1.0.83" % Test

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

// PUL_PLAY=3: the same sources on Play 3 and Pekko, translated (project/PlayLine.scala).
PlayLine.settings
