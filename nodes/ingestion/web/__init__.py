"""The web, as the link branch meets it: the SSRF guard (`guard`) and the download (`download`)."""
