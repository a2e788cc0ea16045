"""course_lib: the library behind the TensorFlow performance course.

Notebooks narrate; this package does the work. Modules are imported on demand
(``from course_lib import bench``) so that ``course --help`` does not pay for
importing TensorFlow.
"""

__version__ = "0.1.0"
