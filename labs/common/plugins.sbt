// The Play line this lab builds on, one sbt plugin per line; PUL_PLAY chooses (project/PlayLine.scala).
// Play 2.9.11 on Akka 2.6.21, the default: the line the book's design names.
// Play 3.0.9 on Apache Pekko with PUL_PLAY=3: the newest Play 3 whose whole tree (what the labs
// use) resolves on the registry the project is built against; 3.0.10 and 3.0.11 lack modules
// there (README, "Play 3"). With full access to Maven Central, raise it here, in every lab.
addSbtPlugin(sys.env.get("PUL_PLAY").filter(_.nonEmpty) match {
  case Some("3") => "org.playframework" % "sbt-plugin" % "3.0.9"
  case _         => "com.typesafe.play" % "sbt-plugin" % "2.9.11" // PlayLine.scala refuses other values
})
