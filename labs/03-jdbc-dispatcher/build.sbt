// Lab 03: sizing dispatchers for JDBC. A standalone Play 2.9 project; it needs a
// PostgreSQL database (see README.md: the lab driver starts a throwaway one).
name := "lab03-jdbc-dispatcher"
organization := "dev.playunderload"
version := "1.0"
scalaVersion := "2.13.18"

lazy val root = (project in file(".")).enablePlugins(PlayJava)

// Play's JDBC support (HikariCP connection pool), evolutions for the schema,
// and the PostgreSQL driver, all from Maven Central.
libraryDependencies ++= Seq(
  guice,
  javaJdbc,
  evolutions,
  "org.postgresql" % "postgresql" % "42.7.4"
)

// Dev mode (`sbt run`) listens on loopback only, like the production server the lab driver starts.
PlayKeys.playDefaultAddress := "127.0.0.1"

javacOptions ++= Seq("-Xlint:unchecked", "-Xlint:deprecation", "-Werror")
scalacOptions ++= Seq("-deprecation", "-feature", "-Xfatal-warnings")

// The functional tests share one database: run the test classes one after another.
Test / parallelExecution := false

// No API docs in the staged app: they only slow `sbt stage` down.
Compile / doc / sources := Seq.empty
Compile / packageDoc / publishArtifact := false
