// Lab 05: the concurrency highway. A standalone Play 2.9 project: `sbt run` works here.
name := "lab05-concurrency-highway"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

lazy val root = (project in file(".")).enablePlugins(PlayJava)

libraryDependencies += guice

// Dev mode (`sbt run`) listens on loopback only, like the production server the lab driver starts.
PlayKeys.playDefaultAddress := "127.0.0.1"

javacOptions ++= Seq("-Xlint:unchecked", "-Xlint:deprecation", "-Werror")
scalacOptions ++= Seq("-deprecation", "-feature", "-Xfatal-warnings")

// No API docs in the staged app: they only slow `sbt stage` down.
Compile / doc / sources := Seq.empty
Compile / packageDoc / publishArtifact := false
