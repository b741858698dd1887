// Lab 04: what an HTTP filter costs. A Play 2.9 project of its own: `sbt run` works here.
name := "lab04-filter-cost"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

// The instruments the lab driver reads (/pools, the timeline, a profile), built from
// labs/instruments as a part of this build (labs/sbt/build/Instruments.scala).
// PlayJava brings Play's filters (CSRF, security headers, allowed hosts) as it does for any new app;
// the lab has Scala and Java filters side by side.
lazy val instruments = Instruments.project
lazy val root = (project in file(".")).enablePlugins(PlayJava).dependsOn(instruments % Instruments.Uses)

libraryDependencies += guice

// Dev mode (`sbt run`) listens on loopback only, like the production server the lab driver starts.
PlayKeys.playDefaultAddress := "127.0.0.1"

javacOptions ++= Seq("-Xlint:unchecked", "-Xlint:deprecation", "-Werror")
scalacOptions ++= Seq("-deprecation", "-feature", "-Xfatal-warnings")

// No API docs in the staged app: they only slow `sbt stage` down.
Compile / doc / sources := Seq.empty
Compile / packageDoc / publishArtifact := false

// PUL_PLAY=3: the same sources on Play 3 and Pekko, translated (labs/sbt/build/PlayLine.scala).
PlayLine.settings
