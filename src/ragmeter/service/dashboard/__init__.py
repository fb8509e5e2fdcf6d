"""The web dashboard at ``/`` of ``ragmeter serve``: static HTML, CSS and JavaScript modules
shipped in the wheel (no build step, nothing from a CDN) over the JSON API, and the session its
key form opens."""
