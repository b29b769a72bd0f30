"""Views of the checked fleet for people: the HTML report."""
