addSbtPlugin("com.typesafe.play" % "sbt-plugin" % "2.9.11")
